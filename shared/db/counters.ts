import { UpdateCommand } from '../aws/dynamodb.ts';
import { call, db, tableName } from './client.ts';
import { keys } from './keys.ts';

/** Next value of an atomic counter (1, 2, 3, ...). Gaps are possible when a later write fails; duplicates are not. */
export async function nextId(counter: string): Promise<number> {
  const result = await call(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.counter(counter),
        UpdateExpression: 'ADD #v :one',
        ExpressionAttributeNames: { '#v': 'value' },
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'UPDATED_NEW',
      }),
    ),
  );
  return Number(result.Attributes?.value);
}
