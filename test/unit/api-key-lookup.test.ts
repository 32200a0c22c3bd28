import { GetCommand } from '#shared/aws/dynamodb.ts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { db } from '#shared/db/client.ts';
import { keys } from '#shared/db/keys.ts';
import { getApiKey } from '#shared/db/users.ts';

describe('API key lookup', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('reads the hashed key with a strongly consistent GetItem, so a revoked key stops working at once', async () => {
    const send = vi.spyOn(db(), 'send').mockResolvedValue({ Item: undefined } as never);
    expect(await getApiKey('sha256$abc')).toBeUndefined();
    expect(send).toHaveBeenCalledTimes(1);
    const command = send.mock.calls[0]![0];
    expect(command).toBeInstanceOf(GetCommand);
    expect((command as GetCommand).input).toMatchObject({ Key: keys.apiKey('sha256$abc'), ConsistentRead: true });
  });
});
