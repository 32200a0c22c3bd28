import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '#shared/db/keys.ts';
import { getApiKey } from '#shared/db/users.ts';

describe('API key lookup', () => {
  const table = mockClient(DynamoDBDocumentClient);
  afterEach(() => {
    table.reset();
  });

  it('reads the hashed key with a strongly consistent GetItem, so a revoked key stops working at once', async () => {
    table.resolves({ Item: undefined });
    expect(await getApiKey('sha256$abc')).toBeUndefined();
    expect(table.calls()).toHaveLength(1);
    const command = table.call(0).args[0];
    expect(command).toBeInstanceOf(GetCommand);
    expect((command as GetCommand).input).toMatchObject({ Key: keys.apiKey('sha256$abc'), ConsistentRead: true });
  });
});
