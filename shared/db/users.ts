import { DeleteCommand, GetCommand, PutCommand } from '../aws/dynamodb.ts';
import { call, db, tableName, transact } from './client.ts';
import { record } from './items.ts';
import { keys } from './keys.ts';
import { queryIndex } from './query.ts';
import { TABLE_SCHEMA } from './table-schema.ts';

export interface UserRecord {
  id: string;
  email: string;
  first_name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  user_id: string;
  label: string;
  mask_value: string;
  secure_value: string;
  scopes: string[];
  scoped_organizations: string[] | null;
  scoped_teams: number[] | null;
  created_at: string;
}

export async function getUser(userId: string): Promise<UserRecord | undefined> {
  const out = await call(() => db().send(new GetCommand({ TableName: tableName(), Key: keys.user(userId) })));
  return record<UserRecord>(out.Item);
}

export async function findUserIdByEmail(email: string): Promise<string | undefined> {
  const out = await call(() => db().send(new GetCommand({ TableName: tableName(), Key: keys.userEmail(email) })));
  return out.Item?.user_id as string | undefined;
}

/** Creates the user and claims the e-mail atomically; false when the e-mail is already taken (or being claimed right now). */
export async function createUser(user: UserRecord): Promise<boolean> {
  const outcome = await transact([
    {
      name: 'email',
      Put: {
        TableName: tableName(),
        Item: { ...keys.userEmail(user.email), entity: 'UserEmail', user_id: user.id },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      name: 'user',
      Put: {
        TableName: tableName(),
        Item: { ...keys.user(user.id), entity: 'User', ...user },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ]);
  return outcome.committed;
}

/** Strongly consistent: a key revoked a moment ago must not authenticate from a stale replica. */
export async function getApiKey(secureValue: string): Promise<ApiKeyRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.apiKey(secureValue), ConsistentRead: true })),
  );
  return record<ApiKeyRecord>(out.Item);
}

export async function putApiKey(key: ApiKeyRecord): Promise<void> {
  await call(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.apiKey(key.secure_value),
          ...keys.apiKeysOfUser(key.user_id),
          parent_sk: `${key.created_at}#${key.id}`,
          entity: 'ApiKey',
          ...key,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    ),
  );
}

export async function listApiKeys(userId: string): Promise<ApiKeyRecord[]> {
  const items = await queryIndex(TABLE_SCHEMA.indexes.byParent, keys.apiKeysOfUser(userId).parent_pk);
  return items.map((item) => record<ApiKeyRecord>(item)!);
}

export async function deleteApiKey(secureValue: string): Promise<void> {
  await call(() => db().send(new DeleteCommand({ TableName: tableName(), Key: keys.apiKey(secureValue) })));
}
