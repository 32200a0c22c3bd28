/**
 * Cohorts in trends, as the request names them: the cohort property filter
 * (`{"type": "cohort", "key": "id", "value": <id>, "operator": "in" | "not_in"}`) and the cohort
 * breakdown (`breakdown_type: "cohort"`, `breakdown: [<id>, "all"]`). Pure: the domain checks the
 * ids against the project and loads each cohort's materialised members once per query
 * (shared/domain/trend-cohorts.ts); the columnar engine tests rows against them
 * (columnar/masks.ts, columnar/cohorts.ts).
 */
import { textOf, ValidationError } from '#shared/errors.ts';
import type { PropertyFilter } from './types.ts';

/**
 * PostHog's `CohortPropertyFilter`; `precalculated-cohort` and `static-cohort` are the types its
 * property_to_expr reads the same way. Normalised to `type: "cohort"`.
 */
export const COHORT_FILTER_TYPES: ReadonlySet<string> = new Set(['cohort', 'precalculated-cohort', 'static-cohort']);

export interface CohortPropertyFilter extends PropertyFilter {
  type: 'cohort';
  key: string;
  value: number;
  operator: 'in' | 'not_in';
  /** The caller's name of the filter's value (`properties__0__value`): an unknown cohort is a 400 on it. */
  attr: string;
}

export const isCohortFilter = (f: { type?: string }): f is CohortPropertyFilter => f.type === 'cohort';

/** A cohort id: PostHog's int field takes numbers and numeric strings. */
function cohortId(raw: unknown): number | null {
  const n = typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : raw;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : null;
}

/**
 * PostHog reads `not_in` as NOT IN COHORT and every other operator (absent included, its default
 * `in`) as IN COHORT (hogql/property.py property_to_expr).
 */
export function parseCohortFilter(raw: Record<string, unknown>, attr: string): CohortPropertyFilter {
  const id = cohortId(raw.value);
  if (id === null) throw new ValidationError('A cohort filter needs a cohort id as its value.', `${attr}__value`);
  const operator = raw.operator === undefined || raw.operator === null ? 'in' : textOf(raw.operator);
  return {
    type: 'cohort',
    key: typeof raw.key === 'string' && raw.key !== '' ? raw.key : 'id',
    value: id,
    operator: operator === 'not_in' ? 'not_in' : 'in',
    attr: `${attr}__value`,
  };
}

/** As echoed back: PostHog's shape, without the caller's field name. */
export const cohortFilterEcho = (f: CohortPropertyFilter): PropertyFilter => ({
  key: f.key,
  value: f.value,
  operator: f.operator,
  type: 'cohort',
});

/** `all` (or PostHog's 0): every person, labelled "all users". */
export type CohortBreakdownValue = number | 'all';

/** Cohorts one breakdown may list: each is its own pass over the events (columnar/cohorts.ts). */
export const MAX_COHORT_BREAKDOWN_VALUES = 25;

/**
 * A cohort breakdown's values: a list of cohort ids and/or `"all"`, a single one, or (GET) the list
 * as JSON text. Each value is its own row, as in PostHog (a person in two cohorts counts in both).
 */
export function parseCohortBreakdown(raw: unknown, attr: string): CohortBreakdownValue[] {
  let value = raw;
  if (typeof value === 'string' && /^\s*\[/.test(value)) {
    try {
      value = JSON.parse(value);
    } catch {
      throw new ValidationError('A cohort breakdown is a list of cohort ids or "all".', attr);
    }
  }
  const list = Array.isArray(value) ? value : value === undefined || value === null || value === '' ? [] : [value];
  if (!list.length) throw new ValidationError('A cohort breakdown needs at least one cohort id or "all".', attr);
  if (list.length > MAX_COHORT_BREAKDOWN_VALUES)
    throw new ValidationError(
      `A cohort breakdown lists at most ${MAX_COHORT_BREAKDOWN_VALUES} cohorts; this one lists ${list.length}.`,
      attr,
    );
  const out: CohortBreakdownValue[] = [];
  for (const item of list) {
    const v: CohortBreakdownValue | null =
      item === 'all' || item === 0 || item === '0' ? 'all' : cohortId(item as unknown);
    if (v === null) throw new ValidationError(`"${textOf(item)}" is not a cohort id or "all".`, attr);
    if (!out.includes(v)) out.push(v);
  }
  return out;
}

/** What the engine needs of each cohort a query names: its name (breakdown labels) and its members' person ids. */
export interface CohortMembers {
  name: string;
  /** Person ids (integers: a Set of 100k builds in a few ms, where strings cost an allocation each). */
  members: ReadonlySet<number>;
}

/**
 * Whether an actor's person (`String(person.id)` as the engine carries it; an unresolved distinct id
 * stands for itself) is a member: only the exact text of an integer id can be, so a distinct id like
 * `007` or `5.0` never passes for person 7 or 5.
 */
export function isMember(members: ReadonlySet<number>, person: string): boolean {
  const id = Number(person);
  return members.has(id) && String(id) === person;
}

export type CohortSets = ReadonlyMap<number, CohortMembers>;

export const NO_COHORTS: CohortSets = new Map();

/** A cohort breakdown in the model: its values, checked; `breakdown` is their JSON (the cache key and echo read `cohorts`). */
export function cohortBreakdownModel(raw: unknown, attr: string) {
  const cohorts = parseCohortBreakdown(raw, attr);
  return {
    breakdown_type: 'cohort' as const,
    breakdown: JSON.stringify(cohorts),
    source: 'cohort' as const,
    property: '',
    expr: null,
    attr,
    cohorts,
  };
}

/** Where a request names a cohort: its id and the caller's field (a 400 for an unknown cohort names it). */
export interface CohortRef {
  id: number;
  attr: string;
}

type Node = PropertyFilter | { values: readonly unknown[] };

/** The cohort filters of a parsed property group (groups nest), in order. */
export function cohortRefsOf(group: { values: readonly unknown[] }, out: CohortRef[] = []): CohortRef[] {
  for (const v of group.values as Node[]) {
    if ('values' in v && Array.isArray(v.values) && !('key' in v)) cohortRefsOf(v, out);
    else if (isCohortFilter(v as PropertyFilter)) {
      const f = v as CohortPropertyFilter;
      out.push({ id: f.value, attr: f.attr });
    }
  }
  return out;
}
