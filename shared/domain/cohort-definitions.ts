import { textOf, ValidationError } from '../errors.ts';
import { compileFilter, parseFilter, refuseDeepNesting } from '../trends/properties.ts';
import type { PropertyFilter } from '../trends/types.ts';

/**
 * A dynamic cohort's `filters.properties` (PostHog's cohort filter grammar), validated into a tree
 * and evaluated per person. Pure: the caller hands in the person, the memberships of referenced
 * cohorts and the event counts of behavioural leaves.
 */

/** Caps of a definition (stated in the 400s). */
export const MAX_COHORT_LEAVES = 100;
export const MAX_COHORT_DEPTH = 4;
/** Behavioural time windows: at most a year back (each recalculation reads the window's events). */
export const MAX_BEHAVIOURAL_WINDOW_DAYS = 366;

export type CountOperator = 'gte' | 'lte' | 'exact';

export interface EventLeaf {
  kind: 'event';
  /** `events`: `key` is an event name; `actions`: an action id. */
  eventType: 'events' | 'actions';
  key: string | number;
  operator: CountOperator;
  count: number;
  /** Window length (ms) back from the calculation's time. */
  windowMs: number;
  negation: boolean;
  /** Index among the definition's behavioural leaves (its counts are looked up by it). */
  index: number;
}

export type CohortNode =
  | { kind: 'group'; type: 'AND' | 'OR'; values: CohortNode[] }
  | {
      kind: 'person';
      filter: PropertyFilter;
      negation: boolean;
      test: (properties: Record<string, unknown>) => boolean;
    }
  | { kind: 'cohort'; cohortId: number; negation: boolean }
  | EventLeaf;

export interface CohortDefinition {
  root: CohortNode;
  /** Cohort ids referenced by `cohort` leaves. */
  references: number[];
  events: EventLeaf[];
}

/** Behavioural leaves PostHog has that this service does not evaluate: a 400 naming them. */
const UNSUPPORTED_BEHAVIOURS = new Set([
  'performed_event_first_time',
  'performed_event_sequence',
  'performed_event_regularly',
  'stopped_performing_event',
  'restarted_performing_event',
]);

const UNIT_MS: Record<string, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 30 * 86_400_000,
  year: 365 * 86_400_000,
};
const RELATIVE = /^-(\d{1,5})([hdwmy])$/;
const RELATIVE_UNIT: Record<string, string> = { h: 'hour', d: 'day', w: 'week', m: 'month', y: 'year' };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** PostHog's cohort filters: `{"properties": {"type": "AND"|"OR", "values": [...]}}`. */
export function parseCohortFilters(filters: unknown, now: number): CohortDefinition {
  const attr = 'filters__properties';
  if (!isObject(filters) || !isObject(filters.properties))
    throw new ValidationError('Dynamic cohorts need filters: {"properties": {"type": "AND", "values": [...]}}.', attr);
  refuseDeepNesting(filters.properties, attr);
  const state = { leaves: 0, references: new Set<number>(), events: [] as EventLeaf[] };
  const root = parseNode(filters.properties, attr, 1, state, now);
  if (state.leaves === 0) throw new ValidationError('A dynamic cohort needs at least one filter.', attr);
  return { root, references: [...state.references], events: state.events };
}

function parseNode(
  raw: unknown,
  attr: string,
  depth: number,
  state: { leaves: number; references: Set<number>; events: EventLeaf[] },
  now: number,
): CohortNode {
  if (!isObject(raw)) throw new ValidationError('Each cohort filter must be an object.', attr);
  if (Array.isArray(raw.values) && raw.key === undefined) {
    if (depth > MAX_COHORT_DEPTH)
      throw new ValidationError(`Cohort filters may nest at most ${MAX_COHORT_DEPTH} groups deep.`, attr);
    const type = raw.type === undefined ? 'AND' : textOf(raw.type).toUpperCase();
    if (type !== 'AND' && type !== 'OR')
      throw new ValidationError(`"${textOf(raw.type)}" is not a valid choice.`, `${attr}__type`);
    return {
      kind: 'group',
      type,
      values: raw.values.map((v, i) => parseNode(v, `${attr}__values__${i}`, depth + 1, state, now)),
    };
  }
  state.leaves += 1;
  if (state.leaves > MAX_COHORT_LEAVES)
    throw new ValidationError(`A cohort may have at most ${MAX_COHORT_LEAVES} filters.`, attr);
  const negation = raw.negation === true;
  const type = textOf(raw.type ?? 'person');
  if (type === 'person') {
    const filter = parseFilter({ ...raw, type: 'person' }, attr);
    const predicate = compileFilter(filter, { tz: 'UTC', now, weekStartDay: 0 });
    const test = (properties: Record<string, unknown>) =>
      predicate({
        event: '',
        distinct_id: '',
        person_id: '',
        timestamp: '',
        properties: {},
        person_properties: properties,
      });
    return { kind: 'person', filter, negation, test };
  }
  if (type === 'cohort') {
    const id = Number(raw.value);
    if (!Number.isInteger(id) || id <= 0)
      throw new ValidationError('A cohort filter names a cohort by its integer id.', `${attr}__value`);
    state.references.add(id);
    return { kind: 'cohort', cohortId: id, negation };
  }
  if (type === 'behavioral') return parseBehaviour(raw, attr, negation, state, now);
  throw new ValidationError(
    `Cohort filters of type "${type}" are not supported (person, cohort, behavioral).`,
    `${attr}__type`,
  );
}

function parseBehaviour(
  raw: Record<string, unknown>,
  attr: string,
  negation: boolean,
  state: { events: EventLeaf[] },
  _now: number,
): EventLeaf {
  const value = textOf(raw.value);
  if (UNSUPPORTED_BEHAVIOURS.has(value))
    throw new ValidationError(
      `Behavioral cohort filter "${value}" is not supported; supported: performed_event, performed_event_multiple.`,
      `${attr}__value`,
    );
  if (value !== 'performed_event' && value !== 'performed_event_multiple')
    throw new ValidationError(`"${value}" is not a valid behavioral filter.`, `${attr}__value`);
  const eventType = raw.event_type === 'actions' ? 'actions' : 'events';
  if (raw.event_type !== undefined && raw.event_type !== 'events' && raw.event_type !== 'actions')
    throw new ValidationError(`"${textOf(raw.event_type)}" is not a valid choice.`, `${attr}__event_type`);
  let key: string | number;
  if (eventType === 'actions') {
    key = Number(raw.key);
    if (!Number.isInteger(key) || key <= 0)
      throw new ValidationError('An action filter names the action by its integer id.', `${attr}__key`);
  } else {
    if (typeof raw.key !== 'string' || raw.key === '')
      throw new ValidationError('This field is required.', `${attr}__key`, 'required');
    key = raw.key;
  }
  let operator: CountOperator = 'gte';
  let count = 1;
  if (value === 'performed_event_multiple') {
    const op = textOf(raw.operator ?? 'gte');
    const mapped = ({ gte: 'gte', gt: 'gte', lte: 'lte', lt: 'lte', exact: 'exact', eq: 'exact' } as const)[
      op as 'gte'
    ];
    if (!mapped) throw new ValidationError(`"${op}" is not a valid count operator.`, `${attr}__operator`);
    const n = Number(raw.operator_value);
    if (!Number.isInteger(n) || n < 0)
      throw new ValidationError('operator_value must be a non-negative integer.', `${attr}__operator_value`);
    operator = mapped;
    // PostHog's gt / lt count strictly: kept as gte n+1 / lte n-1.
    count = op === 'gt' ? n + 1 : op === 'lt' ? n - 1 : n;
  }
  const windowMs = windowOf(raw, attr);
  const leaf: EventLeaf = {
    kind: 'event',
    eventType,
    key,
    operator,
    count,
    windowMs,
    negation,
    index: state.events.length,
  };
  state.events.push(leaf);
  return leaf;
}

function windowOf(raw: Record<string, unknown>, attr: string): number {
  let n: number;
  let unit: string;
  if (raw.explicit_datetime !== undefined && raw.explicit_datetime !== null) {
    const m = RELATIVE.exec(textOf(raw.explicit_datetime));
    if (!m)
      throw new ValidationError('explicit_datetime must be relative, such as "-30d".', `${attr}__explicit_datetime`);
    n = Number(m[1]);
    unit = RELATIVE_UNIT[m[2]!]!;
  } else {
    n = Number(raw.time_value);
    unit = textOf(raw.time_interval ?? '');
    if (!Number.isInteger(n) || n <= 0)
      throw new ValidationError('time_value must be a positive integer.', `${attr}__time_value`);
    if (!Object.hasOwn(UNIT_MS, unit))
      throw new ValidationError(`"${unit}" is not a valid time_interval.`, `${attr}__time_interval`);
  }
  const ms = n * UNIT_MS[unit]!;
  if (ms > MAX_BEHAVIOURAL_WINDOW_DAYS * 86_400_000)
    throw new ValidationError(
      `Behavioral time windows may reach at most ${MAX_BEHAVIOURAL_WINDOW_DAYS} days back.`,
      `${attr}__time_value`,
    );
  return ms;
}

export interface MemberContext {
  /** The person's current properties. */
  properties: Record<string, unknown>;
  /** Whether the person is a member of a referenced cohort. */
  inCohort: (cohortId: number) => boolean;
  /** How many of the leaf's events the person did within its window. */
  eventCount: (leaf: EventLeaf) => number;
}

export function matchesCohort(node: CohortNode, person: MemberContext): boolean {
  switch (node.kind) {
    case 'group':
      if (node.values.length === 0) return true;
      return node.type === 'OR'
        ? node.values.some((v) => matchesCohort(v, person))
        : node.values.every((v) => matchesCohort(v, person));
    case 'person':
      return node.test(person.properties) !== node.negation;
    case 'cohort':
      return person.inCohort(node.cohortId) !== node.negation;
    case 'event': {
      const n = person.eventCount(node);
      const hit =
        node.operator === 'gte' ? n >= node.count : node.operator === 'lte' ? n <= node.count : n === node.count;
      return hit !== node.negation;
    }
  }
}

/** Whether, in a graph of cohort references, `start`'s references lead back to `start`. */
export function referencesLoop(start: number, referencesOf: (id: number) => number[]): boolean {
  const seen = new Set<number>();
  const stack = [...referencesOf(start)];
  while (stack.length) {
    const id = stack.pop()!;
    if (id === start) return true;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...referencesOf(id));
  }
  return false;
}
