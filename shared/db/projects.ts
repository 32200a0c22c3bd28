import { GetCommand, UpdateCommand } from '../aws/dynamodb.ts';
import { call, db, conditional, tableName } from './client.ts';
import { nextId } from './counters.ts';
import { record } from './items.ts';
import { keys } from './keys.ts';

export interface ProjectRecord {
  id: number;
  uuid: string;
  organization_id: string;
  name: string;
  api_token: string;
  timezone: string;
  week_start_day: 0 | 1;
  test_account_filters: unknown[];
  /** Turns posthog-js autocapture off through remote config; absent on projects made before it existed (false). */
  autocapture_opt_out?: boolean;
  created_at: string;
}

/** A new project id (integers, as PostHog's team ids: one service-wide counter). */
export async function nextProjectId(): Promise<number> {
  return nextId('project');
}

export async function getProject(orgId: string, projectId: number): Promise<ProjectRecord | undefined> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.project(orgId, projectId), ConsistentRead: true })),
  );
  return record<ProjectRecord>(out.Item);
}

export type ProjectChanges = Partial<
  Pick<ProjectRecord, 'name' | 'timezone' | 'week_start_day' | 'test_account_filters' | 'autocapture_opt_out'>
> & { updated_at: string };

/** Sets only the given settings (so concurrent edits of different settings both land). */
export async function updateProjectSettings(
  orgId: string,
  projectId: number,
  changes: ProjectChanges,
): Promise<ProjectRecord | undefined> {
  const entries = Object.entries(changes);
  const out = await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.project(orgId, projectId),
        UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: Object.fromEntries(entries.map(([k], i) => [`#f${i}`, k])),
        ExpressionAttributeValues: Object.fromEntries(entries.map(([, v], i) => [`:v${i}`, v])),
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  return record<ProjectRecord>(out?.Attributes);
}

/**
 * The generation of the project's cached answers (0 before the first bump). It is part of every cache
 * key (query answers, legacy trends), so a bump makes every earlier answer unreachable at once.
 */
export async function answersGeneration(projectId: number): Promise<number> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.answersGeneration(projectId), ConsistentRead: true })),
  );
  return Number(out.Item?.generation ?? 0);
}

/**
 * Retires every cached answer of the project: called once persons or events are deleted, split or
 * edited, or an action changes, so that no answer computed before is served again.
 */
export async function bumpAnswersGeneration(projectId: number): Promise<void> {
  await call(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.answersGeneration(projectId),
        UpdateExpression: 'ADD generation :one SET entity = :e',
        ExpressionAttributeValues: { ':one': 1, ':e': 'AnswersGeneration' },
      }),
    ),
  );
}

/**
 * The version of the project's distinct id -> person map (0 before the first bump). The lake stores
 * each event's person as of its day's compaction, with the version it read first: a person count from
 * the lake is exact only while the version has not moved since (shared/domain/lake-trends.ts).
 */
export async function personsVersion(projectId: number): Promise<number> {
  const out = await call(() =>
    db().send(new GetCommand({ TableName: tableName(), Key: keys.personsVersion(projectId), ConsistentRead: true })),
  );
  return Number(out.Item?.version ?? 0);
}

/** Called after distinct ids changed person (merges) or lost one (person deletions, splits): one UpdateItem. */
export async function bumpPersonsVersion(projectId: number): Promise<void> {
  await call(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.personsVersion(projectId),
        UpdateExpression: 'ADD version :one SET entity = :e',
        ExpressionAttributeValues: { ':one': 1, ':e': 'PersonsVersion' },
      }),
    ),
  );
}

/** When the project's first event happened (undefined before any). */
export async function firstEventAt(projectId: number): Promise<Date | undefined> {
  const out = await call(() => db().send(new GetCommand({ TableName: tableName(), Key: keys.firstEvent(projectId) })));
  return out.Item ? new Date(String(out.Item.first_at)) : undefined;
}

/** Lowers the project's first-event time if `timestamp` is earlier (idempotent: replays change nothing). */
export async function noteEventTime(projectId: number, timestamp: string): Promise<void> {
  await conditional(() =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.firstEvent(projectId),
        UpdateExpression: 'SET first_at = :t, entity = :e',
        ConditionExpression: 'attribute_not_exists(first_at) OR first_at > :t',
        ExpressionAttributeValues: { ':t': timestamp, ':e': 'FirstEvent' },
      }),
    ),
  );
}
