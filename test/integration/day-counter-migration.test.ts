import { GetCommand, PutCommand, UpdateCommand } from '#shared/aws/dynamodb.ts';
import { describe, expect, it } from 'vitest';
import { db, tableName } from '#shared/db/client.ts';
import { keys } from '#shared/db/keys.ts';
import { moveLegacyDayCounters, readDayCounters } from '#shared/db/segments.ts';

const PROJECT = 999_000_014;
const legacyKey = (day: string, event: string) => ({
  pk: `${keys.legacyDayCount.pkPrefix}${PROJECT}#${day}`,
  sk: `${keys.eventDayPrefix(event).slice(0, -1)}${keys.legacyDayCount.skSuffix}`,
});

describe('moving day counters to their month partitions (npm run migrate -- day-counters)', () => {
  it('adds each legacy counter to the month counter (keeping what was counted since), deletes it, and a rerun moves nothing', async () => {
    const put = (Item: Record<string, unknown>) => db().send(new PutCommand({ TableName: tableName(), Item }));
    await put({ ...legacyKey('2024-03-31', '$pageview'), entity: 'DayCount', event: '$pageview', count: 3, xsum: 42 });
    await put({ ...legacyKey('2024-04-01', 'signed up'), entity: 'DayCount', event: 'signed up', count: 2, xsum: 7 });
    // Counted after the change, under the new key, before the migration ran.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.dayCount(PROJECT, '2024-03-31', '$pageview'),
        UpdateExpression: 'ADD #c :c, xsum :x SET entity = :e, #n = :n',
        ExpressionAttributeNames: { '#c': 'count', '#n': 'event' },
        ExpressionAttributeValues: { ':c': 1, ':x': 5, ':e': 'DayCount', ':n': '$pageview' },
      }),
    );
    expect(await moveLegacyDayCounters()).toBeGreaterThanOrEqual(2);
    const counters = await readDayCounters(PROJECT, ['2024-03-31', '2024-04-01'], null);
    expect(counters.get('2024-03-31')?.get('$pageview')?.tally).toEqual({ count: 4, xsum: 47 });
    expect(counters.get('2024-04-01')?.get('signed up')?.tally).toEqual({ count: 2, xsum: 7 });
    const legacy = await db().send(
      new GetCommand({ TableName: tableName(), Key: legacyKey('2024-03-31', '$pageview') }),
    );
    expect(legacy.Item).toBeUndefined();

    expect(await moveLegacyDayCounters()).toBe(0);
    expect(
      (await readDayCounters(PROJECT, ['2024-03-31'], '$pageview')).get('2024-03-31')?.get('$pageview')?.tally,
    ).toEqual({ count: 4, xsum: 47 });
    // The migration scans the whole table, which every other file of the run is filling meanwhile.
  }, 120_000);
});
