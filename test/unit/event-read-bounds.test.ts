import { QueryCommand } from '#shared/aws/dynamodb.ts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { db } from '#shared/db/client.ts';
import { readDayEventsInOrder, readEventsInsertedBetween, readEventsOnDays } from '#shared/db/events.ts';

/**
 * A fake table that answers every Query empty, and refuses a BETWEEN whose lower bound is after its
 * upper one as DynamoDB does (ValidationException). Returns the Queries it was sent.
 */
function fakeTable(): QueryCommand[] {
  const sent: QueryCommand[] = [];
  vi.spyOn(db(), 'send').mockImplementation(async (command: any) => {
    if (!(command instanceof QueryCommand)) throw new Error(`unexpected ${command.constructor.name}`);
    sent.push(command);
    const values = command.input.ExpressionAttributeValues ?? {};
    for (const [low, high] of [
      [':a', ':b'],
      [':from', ':to'],
    ] as const)
      if (low in values && String(values[low]) > String(values[high]))
        throw Object.assign(
          new Error(
            'Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound',
          ),
          { name: 'ValidationException' },
        );
    return { Items: [], Count: 0, ScannedCount: 0 };
  });
  return sent;
}

afterEach(() => {
  vi.restoreAllMocks();
});

const at = (iso: string) => new Date(iso);

describe('raw event reads with inverted bounds', () => {
  it('a day read whose lower bound is after its upper bound answers empty and sends no Query', async () => {
    const sent = fakeTable();
    const from = at('2024-04-20T12:14:00Z');
    const to = at('2024-04-20T12:11:00Z');
    expect(await readEventsOnDays(1, ['2024-04-20'], from, to, ['$pageview'])).toEqual([]);
    expect(await readEventsOnDays(1, ['2024-04-20'], from, to, null)).toEqual([]);
    expect(sent).toHaveLength(0);
    // Not vacuous: the same read the right way round queries every shard of the day.
    expect(await readEventsOnDays(1, ['2024-04-20'], to, from, ['$pageview'])).toEqual([]);
    expect(sent.length).toBeGreaterThan(0);
  });

  it('an ingestion-time window [start, end) with start at or after end answers empty and sends no Query', async () => {
    const sent = fakeTable();
    // The top-up read of a segment written by a compactor whose clock ran ahead: `through` after the reader's now + 1 min.
    expect(await readEventsInsertedBetween(1, at('2024-04-20T12:14:00Z'), at('2024-04-20T12:11:00Z'))).toEqual([]);
    expect(await readEventsInsertedBetween(1, at('2024-04-20T12:11:00Z'), at('2024-04-20T12:11:00Z'))).toEqual([]);
    expect(sent).toHaveLength(0);
    expect(await readEventsInsertedBetween(1, at('2024-04-20T12:11:00Z'), at('2024-04-20T12:14:00Z'))).toEqual([]);
    expect(sent.length).toBeGreaterThan(0);
  });

  it('an event explorer day read with inverted bounds answers empty, complete, with no Query', async () => {
    const sent = fakeTable();
    const budget = { items: 1000 };
    const window = { from: at('2024-04-20T12:14:00Z'), to: at('2024-04-20T12:11:00Z'), newestFirst: true };
    const read = await readDayEventsInOrder(1, '2024-04-20', '$pageview', window, 10, () => true, budget);
    expect(read).toEqual({ events: [], complete: true });
    expect(sent).toHaveLength(0);
    expect(budget.items).toBe(1000);
    const upright = { ...window, from: window.to, to: window.from };
    await readDayEventsInOrder(1, '2024-04-20', '$pageview', upright, 10, () => true, budget);
    expect(sent.length).toBeGreaterThan(0);
  });
});
