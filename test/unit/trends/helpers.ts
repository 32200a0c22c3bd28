import { expect } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import {
  computeTrend,
  parseTrendRequest,
  type ActionDefinition,
  type ProjectSettings,
  type PropertyFilter,
  type TrendEvent,
  type TrendResponse,
} from '#shared/trends/index.ts';

export function project(
  timezone = 'UTC',
  week_start_day: 0 | 1 = 0,
  test_account_filters: PropertyFilter[] = [],
): ProjectSettings {
  return { timezone, week_start_day, test_account_filters };
}

let seq = 0;

/** An event; `person` defaults to the distinct id (and the distinct id to 'user'). */
export function ev(
  event: string,
  timestamp: string,
  opts: {
    person?: string;
    distinct?: string;
    props?: Record<string, unknown>;
    personProps?: Record<string, unknown>;
  } = {},
): TrendEvent {
  const distinct = opts.distinct ?? opts.person ?? 'user';
  return {
    uuid: `e${++seq}`,
    event,
    distinct_id: distinct,
    person_id: opts.person ?? distinct,
    timestamp,
    properties: opts.props ?? {},
    person_properties: opts.personProps ?? {},
  };
}

export function trend(
  request: Record<string, unknown>,
  events: TrendEvent[],
  opts: {
    now: string;
    project?: ProjectSettings;
    actions?: ActionDefinition[];
    firstEventAt?: string;
    /** Group properties by `${type index}:${key}`. */
    groups?: Record<string, Record<string, unknown>>;
  },
): TrendResponse {
  const groups = opts.groups;
  return computeTrend(parseTrendRequest(request), {
    groups: groups && ((index, key) => groups[`${index}:${key}`]),
    events,
    project: opts.project ?? project(),
    actions: opts.actions ?? [],
    now: new Date(opts.now),
    firstEventAt: opts.firstEventAt ? new Date(opts.firstEventAt) : undefined,
  });
}

/** Runs `fn` and checks it throws a ValidationError with this attr (and code, when given). */
export function expectValidation(fn: () => unknown, attr: string, code?: string): ValidationError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ValidationError);
  const err = caught as ValidationError;
  expect(err.attr).toBe(attr);
  if (code) expect(err.code).toBe(code);
  return err;
}

export const iso = (d: Date) => d.toISOString();
