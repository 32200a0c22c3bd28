import { nowIso } from '../clock.ts';
import { bumpAnswersGeneration } from '../db/projects.ts';
import {
  countActions,
  deleteAction as removeAction,
  getAction,
  getActions,
  listActions as readActions,
  nextActionId,
  putAction,
  type ActionRecord,
} from '../db/actions.ts';
import { NotFound, ValidationError } from '../errors.ts';
import type { ActionDefinition, PropertyFilter } from '../trends/types.ts';
import type { Caller } from './access.ts';

export interface ActionInput {
  name?: string;
  description?: string;
  steps?: { event?: string | null; properties?: unknown[] }[];
}

/** PostHog's action shape (the subset this service keeps). */
export function actionResponse(a: ActionRecord) {
  return {
    id: a.id,
    name: a.name,
    description: a.description,
    steps: a.steps.map((s) => ({ event: s.event, properties: s.properties })),
    created_at: a.created_at,
    updated_at: a.updated_at,
    created_by: a.created_by,
    deleted: false,
    tags: [] as string[],
  };
}

/**
 * Steps are validated with the trend engine's filter grammar, the one that will apply them: loaded on a write
 * only (code splitting, infra/build.ts), so reading or deleting actions does not initialise it.
 */
async function steps(input: NonNullable<ActionInput['steps']>) {
  const { parseProperties } = await import('../trends/properties.ts');
  return input.map((s, i) => ({
    event: s.event ?? null,
    properties: parseProperties(s.properties ?? [], `steps__${i}__properties`).echo,
  }));
}

/** The actions list and every lookup of a project's actions read them all: this many at most. */
export const MAX_ACTIONS_PER_PROJECT = 1_000;

export async function createAction(
  caller: Caller,
  projectId: number,
  input: ActionInput & { name: string; steps: NonNullable<ActionInput['steps']> },
) {
  const at = nowIso();
  // Validate the steps before taking an id: a rejected request must leave the table (its counter too) as it was.
  const validSteps = await steps(input.steps);
  if ((await countActions(projectId, MAX_ACTIONS_PER_PROJECT)) >= MAX_ACTIONS_PER_PROJECT)
    throw new ValidationError(
      `A project may have at most ${MAX_ACTIONS_PER_PROJECT} actions; delete one to create another.`,
      null,
    );
  const action: ActionRecord = {
    id: await nextActionId(projectId),
    project_id: projectId,
    name: input.name,
    description: input.description ?? '',
    steps: validSteps,
    created_at: at,
    updated_at: at,
    created_by: { email: caller.user.email, first_name: caller.user.first_name },
  };
  await putAction(action, false);
  return actionResponse(action);
}

export async function findAction(projectId: number, actionId: number): Promise<ActionRecord> {
  const action = await getAction(projectId, actionId);
  if (!action) throw new NotFound();
  return action;
}

export async function updateAction(projectId: number, actionId: number, input: ActionInput) {
  const current = await findAction(projectId, actionId);
  const next: ActionRecord = {
    ...current,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.steps !== undefined ? { steps: await steps(input.steps) } : {}),
    updated_at: nowIso(),
  };
  if (!(await putAction(next, true))) throw new NotFound();
  await bumpAnswersGeneration(projectId);
  return actionResponse(next);
}

export async function deleteAction(projectId: number, actionId: number): Promise<void> {
  if (!(await removeAction(projectId, actionId))) throw new NotFound();
  await bumpAnswersGeneration(projectId);
}

export async function listActions(projectId: number, page: { limit: number; offset: number }) {
  const all = await readActions(projectId);
  return { count: all.length, results: all.slice(page.offset, page.offset + page.limit).map(actionResponse) };
}

/** The definitions a trend names, as the engine wants them; unknown ids are left out (the engine reports them). */
export async function actionDefinitions(projectId: number, ids: number[]): Promise<ActionDefinition[]> {
  if (!ids.length) return [];
  return (await getActions(projectId, [...new Set(ids)])).map((a) => ({
    id: a.id,
    name: a.name,
    steps: a.steps.map((s) => ({ event: s.event, properties: s.properties as PropertyFilter[] })),
  }));
}
