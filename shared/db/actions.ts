import { DeleteCommand, GetCommand, PutCommand } from '../aws/dynamodb.ts';
import { batchGet } from './batch.ts';
import { call, db, conditional, tableName } from './client.ts';
import { nextId } from './counters.ts';
import { record } from './items.ts';
import { keys } from './keys.ts';
import { queryAll } from './query.ts';

export interface ActionStepRecord {
  event: string | null;
  properties: unknown[];
}

export interface ActionRecord {
  id: number;
  project_id: number;
  name: string;
  description: string;
  steps: ActionStepRecord[];
  created_at: string;
  updated_at: string;
  created_by: { email: string; first_name: string };
}

const item = (a: ActionRecord) => ({
  ...keys.action(a.project_id, a.id),
  entity: 'Action',
  ...a,
  steps: JSON.stringify(a.steps),
});
const fromItem = (i: Record<string, unknown>): ActionRecord => ({
  ...record<ActionRecord>(i)!,
  steps: JSON.parse(String(i.steps)) as ActionStepRecord[],
});

/** A new action id: integers counted per project. */
export async function nextActionId(projectId: number): Promise<number> {
  return nextId(keys.actionCounter(projectId));
}

export async function putAction(a: ActionRecord, mustExist: boolean): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new PutCommand({
          TableName: tableName(),
          Item: item(a),
          ConditionExpression: mustExist ? 'attribute_exists(pk)' : 'attribute_not_exists(pk)',
        }),
      ),
    )) !== undefined
  );
}

export async function getAction(projectId: number, actionId: number): Promise<ActionRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.action(projectId, actionId), ConsistentRead: true })),
  );
  return out.Item ? fromItem(out.Item) : undefined;
}

export async function getActions(projectId: number, ids: number[]): Promise<ActionRecord[]> {
  return (await batchGet(ids.map((id) => keys.action(projectId, id)))).map(fromItem);
}

/** How many actions the project has, counting no further than `atMost` (keys only). */
export async function countActions(projectId: number, atMost: number): Promise<number> {
  const { pk, skPrefix } = keys.actionsOfProject(projectId);
  return (await queryAll(pk, skPrefix, { limit: atMost, projection: { expression: '#s', names: { '#s': 'sk' } } }))
    .length;
}

/** A project's actions by id (at most MAX_ACTIONS_PER_PROJECT: one partition, read whole). */
export async function listActions(projectId: number): Promise<ActionRecord[]> {
  const { pk, skPrefix } = keys.actionsOfProject(projectId);
  return (await queryAll(pk, skPrefix)).map(fromItem);
}

export async function deleteAction(projectId: number, actionId: number): Promise<boolean> {
  return (
    (await conditional(() =>
      db().send(
        new DeleteCommand({
          TableName: tableName(),
          Key: keys.action(projectId, actionId),
          ConditionExpression: 'attribute_exists(pk)',
        }),
      ),
    )) !== undefined
  );
}
