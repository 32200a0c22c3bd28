import { GetCommand, PutCommand } from '../aws/dynamodb.ts';
import { call, db, tableName } from './client.ts';
import { keys } from './keys.ts';

/**
 * The position an ActorsQuery walk's page at `offset` starts after (what the previous page ended on),
 * if one was remembered and has not expired (DynamoDB deletes expired items lazily).
 */
export async function walkPosition(
  projectId: number,
  walk: string,
  offset: number,
  now: Date,
): Promise<string | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.actorsWalkPosition(projectId, walk, offset) })),
  );
  if (!out.Item || Number(out.Item.expires_at) * 1000 <= now.getTime()) return undefined;
  return String(out.Item.position);
}

/** Remembers where the walk's page at `offset` starts, for `ttlSeconds`. */
export async function rememberWalkPosition(
  projectId: number,
  walk: string,
  offset: number,
  position: string,
  now: Date,
  ttlSeconds: number,
): Promise<void> {
  await call(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.actorsWalkPosition(projectId, walk, offset),
          entity: 'ActorsWalkPosition',
          position,
          expires_at: Math.floor(now.getTime() / 1000) + ttlSeconds,
        },
      }),
    ),
  );
}
