/**
 * EventsQuery's pure parts (posthog/hogql_queries/events_query_runner.py): what `select`, `orderBy`,
 * `after` / `before` and `limit` mean, and how events become result rows or group-by counts. No I/O.
 */
import { textOf, ValidationError } from '../../errors.ts';
import {
  type DateContext,
  instantInRange,
  OUT_OF_RANGE_HINT,
  parseDateExpression,
  resolveExpression,
} from '../../trends/dates.ts';
import { propertyOf, propertyText } from '../../trends/properties.ts';
import { endOfLocalDay, endOfLocalHour, startOfLocalDay, startOfLocalHour } from '../../trends/tz.ts';

export type EventsColumn =
  | { kind: 'star' | 'uuid' | 'event' | 'timestamp' | 'distinct_id' | 'person' | 'count'; label: string }
  | { kind: 'property'; key: string; label: string };

export const DEFAULT_EVENTS_LIMIT = 100;
export const MAX_EVENTS_LIMIT = 10_000;
/** At most this many rows skipped (`offset`): a page past it is read like any other, event by event. */
export const MAX_EVENTS_OFFSET = 10_000;
export const MAX_SELECT_COLUMNS = 50;
/** The longest time range one EventsQuery reads (`after` to `before`). */
export const MAX_EVENTS_RANGE_DAYS = 366;

export const SUPPORTED_SELECT =
  '"*", "uuid", "event", "timestamp", "distinct_id", "person", "properties.<key>" and "count()"';

/** PostHog's `expr -- Label` convention: the text after `--` is a display label. */
const expressionOf = (raw: string) => raw.split('--')[0]!.trim();

/** `select` (empty or absent: `*`, as PostHog) into columns; anything else is a 400 on that entry. */
export function parseSelect(select: readonly string[] | undefined): EventsColumn[] {
  const raw = select?.length ? select : ['*'];
  if (raw.length > MAX_SELECT_COLUMNS)
    throw new ValidationError(`At most ${MAX_SELECT_COLUMNS} columns may be selected.`, 'query__select');
  return raw.map((label, i) => {
    const expr = expressionOf(label);
    if (expr === '*' || expr === 'uuid' || expr === 'event' || expr === 'timestamp' || expr === 'distinct_id')
      return { kind: expr === '*' ? 'star' : expr, label };
    if (expr === 'person') return { kind: 'person', label };
    if (expr.replace(/\s+/g, '') === 'count()') return { kind: 'count', label };
    const property = /^properties\.(.+)$/s.exec(expr)?.[1];
    const key = property && /^(["'`]).*\1$/s.test(property) ? property.slice(1, -1) : property;
    if (key) return { kind: 'property', key, label };
    throw new ValidationError(
      `Unsupported select column "${expr.slice(0, 100)}": this service selects ${SUPPORTED_SELECT}.`,
      `query__select__${i}`,
    );
  });
}

export const isAggregation = (columns: readonly EventsColumn[]) => columns.some((c) => c.kind === 'count');

/** count() groups by every other column, as PostHog's events explorer does; only columns a day segment holds. */
export function checkGroupBy(columns: readonly EventsColumn[]): void {
  columns.forEach((c, i) => {
    if (c.kind === 'star' || c.kind === 'uuid')
      throw new ValidationError(
        `"${expressionOf(c.label)}" cannot be selected with count(): count() groups by the other columns, which may be "event", "timestamp", "distinct_id", "person" and "properties.<key>".`,
        `query__select__${i}`,
      );
  });
}

export type EventsOrder = { by: 'timestamp' | 'count'; descending: boolean };

/**
 * `orderBy`: `timestamp DESC` (the default) or `ASC`; with count(), `count() DESC` (the default, as
 * PostHog) or `ASC`. One expression only.
 */
export function parseOrder(orderBy: readonly string[] | undefined, aggregated: boolean): EventsOrder {
  const supported = aggregated ? '"count() DESC" or "count() ASC"' : '"timestamp DESC" or "timestamp ASC"';
  if (!orderBy?.length) return { by: aggregated ? 'count' : 'timestamp', descending: true };
  if (orderBy.length > 1) throw new ValidationError(`Only one order is supported: ${supported}.`, 'query__orderBy__1');
  const match = /^(timestamp|count\(\s*\))(?:\s+(asc|desc))?$/i.exec(expressionOf(orderBy[0]!));
  const by = match?.[1]?.toLowerCase().startsWith('count') ? 'count' : 'timestamp';
  if (!match || (by === 'count') !== aggregated)
    throw new ValidationError(
      `Unsupported order "${expressionOf(orderBy[0]!).slice(0, 100)}": this query is ordered by ${supported}.`,
      'query__orderBy__0',
    );
  return { by, descending: (match[2] ?? 'asc').toLowerCase() === 'desc' };
}

const RELATIVE = /^-?(\d+)?([hdwmqysM])(Start|End)?$/;

/**
 * A bound as PostHog's relative_date_parse reads it (no truncation): `-24h`, `-7d`, `-30M` (minutes),
 * `-1dStart`, or an ISO date / date-time (naive ones in the project's time zone). null: not a date.
 */
export function parseInstant(raw: string, ctx: DateContext): number | null {
  const s = raw.trim();
  const rel = RELATIVE.exec(s);
  if (rel) {
    const n = rel[1] === undefined ? 0 : Number(rel[1]);
    const unit = rel[2]!;
    const position = rel[3];
    const now = new Date(ctx.now);
    const seconds: Record<string, number> = { s: 1, M: 60, h: 3_600, d: 86_400, w: 604_800, q: 13 * 604_800 };
    let t: number;
    if (unit === 'm' || unit === 'y') {
      const back = new Date(now);
      back.setUTCMonth(back.getUTCMonth() - n * (unit === 'y' ? 12 : 1));
      if (back.getUTCDate() !== now.getUTCDate()) back.setUTCDate(0); // relativedelta clamps to the month's end
      t = back.getTime();
    } else t = ctx.now - n * seconds[unit]! * 1000;
    if (position && unit === 'h') return position === 'Start' ? startOfLocalHour(t, ctx.tz) : endOfLocalHour(t, ctx.tz);
    if (position && unit === 'd') return position === 'Start' ? startOfLocalDay(t, ctx.tz) : endOfLocalDay(t, ctx.tz);
    return t;
  }
  const expr = parseDateExpression(s);
  if (expr?.kind !== 'absolute') return null;
  return resolveExpression(expr, ctx, undefined).t;
}

/** [after, before] as instants: PostHog keeps `after < timestamp < before`; `after` defaults to -24h, `before` to now + 5 s. */
export function resolveWindow(
  after: string | null | undefined,
  before: string | null | undefined,
  ctx: DateContext,
  firstEventAt: number | undefined,
): { after: number; before: number } {
  const bound = (raw: string, attr: string) => {
    const t = parseInstant(raw, ctx);
    if (t === null)
      throw new ValidationError(
        `"${raw.slice(0, 100)}" is not a date: use an ISO date or date-time, or a relative date like -24h, -7d, -30M.`,
        attr,
      );
    // `-999999y` is NaN here, which no comparison below would refuse.
    if (!instantInRange(t))
      throw new ValidationError(`"${raw.slice(0, 100)}" is out of range: ${OUT_OF_RANGE_HINT}.`, attr);
    return t;
  };
  const end = before ? bound(before, 'query__before') : ctx.now + 5_000;
  // `all`: from the project's first event (nothing earlier exists).
  const start = after === 'all' ? Math.min(firstEventAt ?? end, end) - 1 : bound(after || '-24h', 'query__after');
  if (end - start > MAX_EVENTS_RANGE_DAYS * 86_400_000)
    throw new ValidationError(
      `An EventsQuery reads at most ${MAX_EVENTS_RANGE_DAYS} days: "after" and "before" are further apart than that.`,
      'query__after',
    );
  return { after: start, before: end };
}

export function parseLimit(limit: number | undefined, offset: number | undefined): { limit: number; offset: number } {
  if (limit !== undefined && limit > MAX_EVENTS_LIMIT)
    throw new ValidationError(`The limit may be at most ${MAX_EVENTS_LIMIT}.`, 'query__limit');
  if (offset !== undefined && offset > MAX_EVENTS_OFFSET)
    throw new ValidationError(`The offset may be at most ${MAX_EVENTS_OFFSET}.`, 'query__offset');
  return { limit: limit ?? DEFAULT_EVENTS_LIMIT, offset: offset ?? 0 };
}

/** One event as the rows path reads it. */
export interface ExplorerEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  /** ISO UTC. */
  timestamp: string;
  /** Ingestion time, ISO UTC. */
  inserted_at: string;
}

/** The person column's value: PostHog's person object, or only the distinct id when it has no person. */
export type PersonCell =
  | { uuid: string; created_at: string; properties: Record<string, unknown>; distinct_id: string }
  | { distinct_id: string };

/** `properties.<key>` as PostHog's HogQL gives it: text (numbers and booleans as JSON), null when absent. */
export function propertyCell(properties: Record<string, unknown>, key: string): string | null {
  const v = propertyOf(properties, key);
  return v === undefined || v === null ? null : propertyText(v);
}

/** The `*` object (SELECT_STAR_FROM_EVENTS_FIELDS). */
export function starCell(e: ExplorerEvent, projectId: number): Record<string, unknown> {
  const chain = propertyOf(e.properties, '$elements_chain');
  return {
    uuid: e.uuid,
    event: e.event,
    properties: e.properties,
    timestamp: e.timestamp,
    team_id: projectId,
    distinct_id: e.distinct_id,
    elements_chain: typeof chain === 'string' ? chain : '',
    created_at: e.inserted_at,
    person_mode: 'full',
  };
}

/** One result row, a value per column. */
export function eventRow(
  columns: readonly EventsColumn[],
  e: ExplorerEvent,
  projectId: number,
  person: (distinctId: string) => PersonCell,
): unknown[] {
  return columns.map((c) => {
    switch (c.kind) {
      case 'star':
        return starCell(e, projectId);
      case 'uuid':
        return e.uuid;
      case 'event':
        return e.event;
      case 'timestamp':
        return e.timestamp;
      case 'distinct_id':
        return e.distinct_id;
      case 'person':
        return person(e.distinct_id);
      case 'property':
        return propertyCell(e.properties, c.key);
      default:
        return 1; // count() on a single event (the rows path never selects it)
    }
  });
}

/** Orders events by time (then uuid, as the table's sort key does), newest first when `descending`. */
export function compareEvents(descending: boolean): (a: ExplorerEvent, b: ExplorerEvent) => number {
  const sign = descending ? -1 : 1;
  return (a, b) =>
    sign *
    (a.timestamp === b.timestamp
      ? a.uuid < b.uuid
        ? -1
        : a.uuid > b.uuid
          ? 1
          : 0
      : a.timestamp < b.timestamp
        ? -1
        : 1);
}

/** What a count() query keeps of an event: its group values (distinct id stands for the person until rows are shaped). */
export interface CountedEvent {
  event: string;
  distinct_id: string;
  /** Epoch ms. */
  t: number;
  properties: Record<string, unknown>;
}

export interface CountGroup {
  /** The group's value per non-count column (`person` holds the distinct id). */
  values: unknown[];
  count: number;
}

/** count() with the other columns as the group-by. */
export function countGroups(
  columns: readonly EventsColumn[],
  events: Iterable<CountedEvent>,
  /** Called every 512 events: throws to stop (the run's deadline or cancellation). */
  check: () => void = () => {},
): CountGroup[] {
  const groups = new Map<string, CountGroup>();
  let seen = 0;
  for (const e of events) {
    seen += 1;
    if (seen % 512 === 0) check();
    const values = columns.map((c) => {
      switch (c.kind) {
        case 'event':
          return e.event;
        case 'timestamp':
          return new Date(e.t).toISOString();
        case 'distinct_id':
        case 'person':
          return e.distinct_id;
        case 'property':
          return propertyCell(e.properties, c.key);
        default:
          return null;
      }
    });
    const key = JSON.stringify(values);
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { values, count: 1 });
  }
  return [...groups.values()];
}

/** Groups by count (then by their values' text, so ties have a stable order). */
export function orderGroups(groups: CountGroup[], descending: boolean): CountGroup[] {
  const keyed = groups.map((g) => ({ g, key: JSON.stringify(g.values) }));
  keyed.sort((a, b) =>
    a.g.count !== b.g.count
      ? descending
        ? b.g.count - a.g.count
        : a.g.count - b.g.count
      : a.key < b.key
        ? -1
        : a.key > b.key
          ? 1
          : 0,
  );
  return keyed.map(({ g }) => g);
}

/** A count group as a result row (`count()` columns take the count, `person` its person object). */
export function groupRow(
  columns: readonly EventsColumn[],
  group: CountGroup,
  person: (distinctId: string) => PersonCell,
): unknown[] {
  return columns.map((c, i) =>
    c.kind === 'count' ? group.count : c.kind === 'person' ? person(String(group.values[i])) : group.values[i],
  );
}

/** The ClickHouse types PostHog reports per column. */
export function columnTypes(columns: readonly EventsColumn[]): string[] {
  const types: Record<EventsColumn['kind'], string> = {
    star: "Tuple(UUID, String, String, DateTime64(6, 'UTC'), Int64, String, String, DateTime64(6, 'UTC'), String)",
    uuid: 'UUID',
    event: 'String',
    timestamp: "DateTime64(6, 'UTC')",
    distinct_id: 'String',
    person: 'String',
    property: 'Nullable(String)',
    count: 'UInt64',
  };
  return columns.map((c) => types[c.kind]);
}

/** The page of `rows` at offset (given offset + limit + 1 rows or fewer), and whether more follow. */
export function pageOf<T>(rows: readonly T[], limit: number, offset: number): { results: T[]; hasMore: boolean } {
  return { results: rows.slice(offset, offset + limit), hasMore: rows.length > offset + limit };
}

/** The largest answer returned (as trends: a Lambda answer stops at 6 MB). */
export const MAX_EVENTS_ANSWER_BYTES = 5 * 1024 * 1024;

/** An answer over the size a function may return is a 400 saying how to make it smaller. */
export function checkAnswerBytes(bytes: number): void {
  if (bytes <= MAX_EVENTS_ANSWER_BYTES) return;
  throw new ValidationError(
    `This answer would be ${Math.ceil(bytes / 1024).toLocaleString('en-US')} KiB; at most ${(MAX_EVENTS_ANSWER_BYTES / 1024).toLocaleString('en-US')} KiB can be returned. Lower the limit or select fewer columns ("*" carries every property).`,
    'query__limit',
  );
}

/** Fields of an EventsQuery this service does not apply; a query using one is refused rather than answered wrongly. */
const UNSUPPORTED_FIELDS: Record<string, string> = {
  where: 'HogQL "where" expressions are not supported; use "properties" filters.',
  fixedProperties: '"fixedProperties" is not supported; use "properties".',
  actionId: 'Action filters ("actionId") are not supported.',
  actionSteps: 'Action filters ("actionSteps") are not supported.',
  events: 'Several event names ("events") are not supported; give one "event".',
  source: 'EventsQuery with a "source" query is not supported.',
  filterTestAccounts: '"filterTestAccounts" is not supported.',
};

/** A field that changes the result but is not applied here: 400 naming it (empty values and `false` are harmless). */
export function refuseUnsupportedFields(query: Record<string, unknown>): void {
  for (const [field, detail] of Object.entries(UNSUPPORTED_FIELDS)) {
    const v = query[field];
    if (v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0)) continue;
    throw new ValidationError(detail, `query__${field}`);
  }
}

/** A person id as PostHog's personId takes it; this service's persons are addressed by their integer id. */
export function parsePersonId(raw: unknown): number | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  const text = textOf(raw);
  if (!/^\d{1,15}$/.test(text))
    throw new ValidationError(
      `"${text.slice(0, 100)}" is not a person id (this service's person ids are integers).`,
      'query__personId',
    );
  return Number(text);
}
