import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchPut } from '#shared/db/batch.ts';
import { transact } from '#shared/db/client.ts';
import { insertMembership, insertOrganization, MembershipLevel } from '#shared/db/organizations.ts';
import { applyCountMoves } from '#shared/db/rollups.ts';
import { createUser } from '#shared/db/users.ts';
import { Conflict, ServiceUnavailable } from '#shared/errors.ts';
import { TRANSIENT, retryTransient } from '#shared/retry.ts';

/** An error as the DynamoDB client throws it: the SDK's own exception type (no table behind these tests). */
const sdkError = (name: string, reasons?: string[]) =>
  Object.assign(
    new DynamoDBServiceException({
      name,
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
      message: `${name} (mocked)`,
    }),
    reasons ? { CancellationReasons: reasons.map((Code) => ({ Code })) } : {},
  );

/** The table's document client, mocked (aws-sdk-client-mock): every send answers what a test says. */
const table = mockClient(DynamoDBDocumentClient);

const put = (pk: string) => ({
  Put: { TableName: 't', Item: { pk, sk: 'x' }, ConditionExpression: 'attribute_not_exists(pk)' },
});

afterEach(() => {
  vi.restoreAllMocks();
  table.reset();
});

describe('retryTransient', () => {
  /** An attempt that always reports a conflict, and how many times it ran. */
  function alwaysConflicting() {
    let calls = 0;
    const attempt = async () => {
      calls++;
      return TRANSIENT;
    };
    return { attempt, calls: () => calls };
  }

  it('runs the attempt again while it reports a conflict, and returns the first other result', async () => {
    const seen: number[] = [];
    const result = await retryTransient(
      'Thing',
      async (n) => {
        seen.push(n);
        return n < 2 ? TRANSIENT : 'done';
      },
      { attempts: 5 },
    );
    expect(result).toBe('done');
    expect(seen).toEqual([0, 1, 2]);
  });

  it('takes undefined and false as results, not as conflicts', async () => {
    expect(await retryTransient('Thing', async () => undefined, { attempts: 1 })).toBeUndefined();
    expect(await retryTransient('Thing', async () => false, { attempts: 1 })).toBe(false);
  });

  it('gives up after the attempts with the error the caller names, or a 409 naming the thing', async () => {
    const conflicting = alwaysConflicting();
    const gaveUp = new Error('kept conflicting');
    await expect(
      retryTransient('Thing', conflicting.attempt, { attempts: 3, baseMs: 0, gaveUp: () => gaveUp }),
    ).rejects.toBe(gaveUp);
    expect(conflicting.calls()).toBe(3);
    const error = await retryTransient('Person 7', async () => TRANSIENT, { attempts: 2, baseMs: 0 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Conflict);
    expect((error as Error).message).toBe('Person 7 kept changing during the request; retry it.');
  });

  it('gives up at the deadline even with attempts left', async () => {
    const conflicting = alwaysConflicting();
    await expect(
      retryTransient('Thing', conflicting.attempt, { attempts: 1_000, deadline: Date.now() - 1 }),
    ).rejects.toBeInstanceOf(Conflict);
    expect(conflicting.calls()).toBe(1);
  });

  it('lets an error of the attempt through at once (no retry)', async () => {
    let calls = 0;
    const boom = new ServiceUnavailable();
    await expect(
      retryTransient(
        'Thing',
        async () => {
          calls++;
          throw boom;
        },
        { attempts: 5 },
      ),
    ).rejects.toBe(boom);
    expect(calls).toBe(1);
  });

  it('waits a random time below min(cap, base * 2^n) between attempts (full jitter)', async () => {
    const waits: number[] = [];
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const realSetTimeout = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms: number) => {
      waits.push(ms);
      return realSetTimeout(fn, 0);
    }) as typeof setTimeout);
    await expect(
      retryTransient('Thing', async () => TRANSIENT, { attempts: 5, baseMs: 10, capMs: 50 }),
    ).rejects.toBeInstanceOf(Conflict);
    expect(waits).toEqual([5, 10, 20, 25]);
  });

  it('retries at once with baseMs 0', async () => {
    const spy = vi.spyOn(globalThis, 'setTimeout');
    await expect(retryTransient('Thing', async () => TRANSIENT, { attempts: 4, baseMs: 0 })).rejects.toBeInstanceOf(
      Conflict,
    );
    expect(spy).not.toHaveBeenCalled();
  });
});

describe('transact', () => {
  it('sends the items without their names and reports a commit', async () => {
    table.resolves({});
    expect(await transact([{ name: 'slug', ...put('a') }, put('b')])).toEqual({ committed: true });
    const input = (table.call(0).args[0] as { input: { TransactItems: unknown[] } }).input;
    expect(input.TransactItems).toEqual([put('a'), put('b')]);
  });

  it('names the items whose condition failed (by name, or by index when unnamed)', async () => {
    table.rejects(
      sdkError('TransactionCanceledException', ['None', 'ConditionalCheckFailed', 'ConditionalCheckFailed']),
    );
    expect(await transact([put('a'), { name: 'user', ...put('b') }, put('c')])).toEqual({
      committed: false,
      failed: ['user', '2'],
    });
  });

  it('reads TransactionConflict as a conflict to retry, and a failed condition as winning over it', async () => {
    table
      .rejectsOnce(sdkError('TransactionCanceledException', ['None', 'TransactionConflict']))
      .rejectsOnce(sdkError('TransactionCanceledException', ['TransactionConflict', 'ConditionalCheckFailed']));
    expect(await transact([put('a'), put('b')])).toEqual({ committed: false, conflict: true });
    expect(await transact([put('a'), { name: 'b', ...put('b') }])).toEqual({ committed: false, failed: ['b'] });
  });

  it.each([
    ['ThrottlingError', 'a cancellation reason'],
    ['ProvisionedThroughputExceeded', 'a cancellation reason'],
    ['RequestLimitExceeded', 'a cancellation reason'],
  ])('never reads throttling (%s as %s) as a failed condition: a 503', async (code) => {
    table.rejects(sdkError('TransactionCanceledException', ['None', code]));
    await expect(transact([put('a'), put('b')])).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it.each([
    'ThrottlingException',
    'ProvisionedThroughputExceededException',
    'RequestLimitExceeded',
    'TransactionInProgressException',
  ])('answers a throttled call (%s) with a 503', async (name) => {
    table.rejects(sdkError(name));
    await expect(transact([put('a')])).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it('lets any other cancellation through as the error it is', async () => {
    const refused = sdkError('TransactionCanceledException', ['ValidationError']);
    table.rejects(refused);
    await expect(transact([put('a')])).rejects.toBe(refused);
  });
});

describe('rollup transactions', () => {
  it('retry a TransactionConflict and surface giving up after 8 attempts instead of dropping the counts', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0); // no waiting between attempts
    table.rejects(sdkError('TransactionCanceledException', ['TransactionConflict']));
    const move = {
      projectId: 1,
      uuid: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      to: { event: 'e', hour: '2024-01-01T00' },
    };
    await expect(applyCountMoves([move])).rejects.toThrow('rollup transaction kept conflicting after 8 attempts');
    expect(table.calls()).toHaveLength(8);
  });

  it('report a move whose marker condition failed, for the caller to re-read (no retry of the same write)', async () => {
    table.rejects(sdkError('TransactionCanceledException', ['ConditionalCheckFailed', 'None', 'None', 'None']));
    const move = {
      projectId: 1,
      uuid: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      to: { event: 'e', hour: '2024-01-01T00' },
    };
    expect(await applyCountMoves([move])).toEqual([move]);
    expect(table.calls()).toHaveLength(2); // the group, then the move alone
  });

  it('answer throttling with a 503 instead of retrying it as a conflict', async () => {
    table.rejects(sdkError('TransactionCanceledException', ['ThrottlingError', 'None']));
    const move = {
      projectId: 1,
      uuid: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      to: { event: 'e', hour: '2024-01-01T00' },
    };
    await expect(applyCountMoves([move])).rejects.toBeInstanceOf(ServiceUnavailable);
    expect(table.calls()).toHaveLength(1);
  });
});

describe('store readings of a cancelled transaction', () => {
  const at = '2024-01-01T00:00:00.000Z';
  const org = {
    id: 'o1',
    name: 'Acme',
    slug: 'acme',
    logo_media_id: null,
    created_at: at,
    updated_at: at,
    is_member_join_email_enabled: true,
    enforce_2fa: false,
    plugins_access_level: 9,
    customer_id: null,
    member_count: 1,
  };
  const owner = { user_id: 'u1', organization_id: 'o1', level: MembershipLevel.owner, joined_at: at };
  const project = {
    id: 1,
    uuid: 'p1',
    organization_id: 'o1',
    name: 'Default project',
    api_token: 'phc_x',
    timezone: 'UTC',
    week_start_day: 0 as const,
    test_account_filters: [],
    created_at: at,
  };

  it('a membership whose insert was throttled is a 503, not "not added"', async () => {
    table.rejects(sdkError('TransactionCanceledException', ['None', 'ThrottlingError']));
    await expect(insertMembership(owner)).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it('a membership or organization insert that lost a race is a conflict to retry, not a 500', async () => {
    table.rejects(sdkError('TransactionCanceledException', ['TransactionConflict', 'None']));
    expect(await insertMembership(owner)).toBe(TRANSIENT);
    expect(await insertOrganization(org, owner, project)).toBe(TRANSIENT);
  });

  it('an organization insert tells a taken slug by the item that failed, whatever its position', async () => {
    table.rejects(
      sdkError('TransactionCanceledException', ['ConditionalCheckFailed', 'None', 'None', 'None', 'None', 'None']),
    );
    expect(await insertOrganization(org, owner, project)).toBe('slug-taken');
  });

  it('a user insert that lost the race for its e-mail is "not created" (the caller reads the winner), not a 500', async () => {
    table.rejects(sdkError('TransactionCanceledException', ['TransactionConflict', 'None']));
    expect(await createUser({ id: 'u1', email: 'a@b.c', first_name: 'a', created_at: at })).toBe(false);
  });
});

describe('batch writes', () => {
  it('send unprocessed items again until none is left', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const item = { pk: 'a', sk: 'b' };
    table.resolvesOnce({ UnprocessedItems: { 'analytics-unit': [{ PutRequest: { Item: item } }] } }).resolvesOnce({});
    await batchPut([item, { pk: 'c', sk: 'd' }]);
    expect(table.calls()).toHaveLength(2);
    expect(
      (table.call(1).args[0] as { input: { RequestItems: Record<string, unknown[]> } }).input.RequestItems[
        'analytics-unit'
      ],
    ).toEqual([{ PutRequest: { Item: item } }]);
  });

  it('give up with an error after 8 sends that leave items unprocessed', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    table.resolves({
      UnprocessedItems: { 'analytics-unit': [{ PutRequest: { Item: { pk: 'a', sk: 'b' } } }] },
    });
    await expect(batchPut([{ pk: 'a', sk: 'b' }])).rejects.toThrow(
      'BatchWriteItem: items still unprocessed after retries',
    );
    expect(table.calls()).toHaveLength(8);
  });
});
