/**
 * EventsQuery's pure parts (posthog/hogql_queries/events_query_runner.py): what `select`, `where`,
 * `orderBy`, `after` / `before` and `limit` mean, how HogQL expressions read an event, and how events
 * become result rows or aggregated groups. No I/O.
 */
import {
  compileAggregate,
  compileScalar,
  type EvalContext,
  type Expr,
  type FieldReader,
  HogDateTime,
  type HogValue,
} from '../../hogql/index.ts';
import { textOf, ValidationError } from '../../errors.ts';
import {
  DEFAULT_EVENTS_LIMIT,
  MAX_EVENTS_LIMIT,
  MAX_EVENTS_OFFSET,
  MAX_ORDER_EXPRESSIONS,
  MAX_SELECT_COLUMNS,
  MAX_WHERE_EXPRESSIONS,
} from '../../schemas/query/events.ts';
import {
  type DateContext,
  instantInRange,
  OUT_OF_RANGE_HINT,
  parseDateExpression,
  resolveExpression,
} from '../../trends/dates.ts';
import { propertyOf, propertyText } from '../../trends/properties.ts';
import { NAME_PROPERTIES } from '../persons.ts';
import { endOfLocalDay, endOfLocalHour, startOfLocalDay, startOfLocalHour } from '../../trends/tz.ts';
import {
  cellOf,
  compareKeys,
  expressionOf,
  isField,
  type Aliases,
  type OrderTerm,
  parseColumn,
  parseCondition,
  parseOrderTerm,
  propertyPathValue,
  truthy,
  typeOf,
} from './expressions.ts';

/**
 * A select column: `*` and `person` are PostHog's special columns (the event object; the person
 * object looked up by distinct id); anything else is a HogQL expression, possibly an aggregate.
 */
export type EventsColumn =
  | { kind: 'star'; label: string }
  | { kind: 'person'; label: string }
  /** PostHog's `person_display_name`: `{display_name, id, distinct_id}` of the event's person. */
  | { kind: 'display'; label: string }
  | { kind: 'expr'; label: string; expr: Expr; aggregate: boolean; fields: string[][]; attr: string; alias?: string };

/** The longest time range one EventsQuery reads (`after` to `before`). */
export const MAX_EVENTS_RANGE_DAYS = 366;

/** `select` (empty or absent: `*`, as PostHog) into columns; an expression that does not parse or check is a 400 on its entry. */
export function parseSelect(select: readonly string[] | undefined): EventsColumn[] {
  const raw = select?.length ? select : ['*'];
  if (raw.length > MAX_SELECT_COLUMNS)
    throw new ValidationError(`At most ${MAX_SELECT_COLUMNS} columns may be selected.`, 'query__select');
  return raw.map((text, i): EventsColumn => {
    const bare = expressionOf(text);
    if (bare === '*') return { kind: 'star', label: text };
    if (bare === 'person') return { kind: 'person', label: text };
    if (bare === 'person_display_name') return { kind: 'display', label: text };
    const attr = `query__select__${i}`;
    const column = parseColumn(text, 'events', attr);
    // PostHog names an aliased column by its alias, any other by the text as sent.
    return { kind: 'expr', label: column.alias ?? text, ...column, attr };
  });
}

/** As PostHog: a query with an aggregate in any column aggregates, grouped by its other columns. */
export const isAggregation = (columns: readonly EventsColumn[]) =>
  columns.some((c) => c.kind === 'expr' && c.aggregate);

/** A `where` entry: a boolean expression. Entries are ANDed; one with an aggregate filters groups (HAVING). */
export interface Condition {
  expr: Expr;
  aggregate: boolean;
  fields: string[][];
  attr: string;
}

/** The select columns' `AS` names (a `where` or `orderBy` entry may use them). */
export const aliasesOf = (columns: readonly EventsColumn[]): Aliases =>
  new Map(columns.flatMap((c) => (c.kind === 'expr' && c.alias !== undefined ? [[c.alias, c.expr] as const] : [])));

export function parseWhere(
  where: readonly string[] | null | undefined,
  columns: readonly EventsColumn[] = [],
): Condition[] {
  if (!where?.length) return [];
  if (where.length > MAX_WHERE_EXPRESSIONS)
    throw new ValidationError(`At most ${MAX_WHERE_EXPRESSIONS} "where" expressions.`, 'query__where');
  const aliases = aliasesOf(columns);
  return where.map((text, i) => {
    const attr = `query__where__${i}`;
    return { ...parseCondition(text, 'events', attr, aliases), attr };
  });
}

export interface EventsOrderTerm extends OrderTerm {
  attr: string;
  /** In an aggregated query, the select column this term is (its group value, or its aggregate's result). */
  column?: number;
}

const COUNT: Expr = { kind: 'call', name: 'count', args: [] };

/** `coalesce(nullIf(person.properties.email, ''), ..., distinct_id)`: PostHog's person display name. */
const DISPLAY_NAME: Expr = {
  kind: 'call',
  name: 'coalesce',
  args: [
    ...NAME_PROPERTIES.map(
      (key): Expr => ({
        kind: 'call',
        name: 'nullIf',
        args: [
          { kind: 'field', chain: ['person', 'properties', key] },
          { kind: 'constant', value: '' },
        ],
      }),
    ),
    { kind: 'field', chain: ['distinct_id'] },
  ],
};

const fieldsOfDisplay = () => [...NAME_PROPERTIES.map((key) => ['person', 'properties', key]), ['distinct_id']];

/** The `person_display_name` cell: the first non-empty display-name property, else the distinct id (PostHog's coalesce). */
export function displayCell(
  distinctId: string,
  person: PersonCell,
): { display_name: string; id: string | null; distinct_id: string } {
  const properties = 'properties' in person ? person.properties : {};
  const named = NAME_PROPERTIES.map((k) => properties[k]).find((v) => typeof v === 'string' && v !== '');
  return {
    display_name: (named as string | undefined) ?? distinctId,
    id: 'uuid' in person ? person.uuid : null,
    distinct_id: distinctId,
  };
}

/** The AST without source offsets, for "is this the same expression" (a term naming a select column). */
const shapeOf = (expr: Expr) => JSON.stringify(expr, (k, v) => (k === 'span' ? undefined : v));

/**
 * `orderBy` (several expressions, each ASC unless DESC), or PostHog's default: `timestamp DESC` for
 * rows; when aggregating, `count() DESC` if count() is selected, else the first aggregate DESC. A term
 * may name a select column by its alias. When aggregating, a term is an aggregate or one of the
 * selected group columns (as ClickHouse requires of GROUP BY queries).
 */
export function parseOrder(
  orderBy: readonly string[] | null | undefined,
  columns: readonly EventsColumn[],
  aggregated: boolean,
): EventsOrderTerm[] {
  if (orderBy && orderBy.length > MAX_ORDER_EXPRESSIONS)
    throw new ValidationError(`At most ${MAX_ORDER_EXPRESSIONS} orders.`, 'query__orderBy');
  const exprColumns = columns.flatMap((c, i) => (c.kind === 'expr' ? [{ c, i }] : []));
  const aliases = aliasesOf(columns);
  let terms: EventsOrderTerm[];
  if (orderBy?.length)
    terms = orderBy.map((text, i) => {
      const attr = `query__orderBy__${i}`;
      // PostHog's UI sends the column as selected, label included: `person_display_name -- Person DESC`.
      const display = /^\s*person_display_name\b(?:\s*--.*?)?(?:\s+(ASC|DESC))?\s*$/is.exec(text);
      if (display) {
        // As PostHog's runner: the display name's expression; when aggregating, the group's (any: one person per distinct id).
        const expr: Expr = aggregated ? { kind: 'call', name: 'any', args: [DISPLAY_NAME] } : DISPLAY_NAME;
        const fields = fieldsOfDisplay();
        return { expr, descending: display[1]?.toUpperCase() === 'DESC', aggregate: aggregated, fields, attr };
      }
      return { ...parseOrderTerm(text, 'events', attr, aliases), attr };
    });
  else if (!aggregated)
    terms = [
      {
        expr: { kind: 'field', chain: ['timestamp'] },
        descending: true,
        aggregate: false,
        fields: [['timestamp']],
        attr: 'query__orderBy',
      },
    ];
  else {
    const counted = exprColumns.find(({ c }) => shapeOf(c.expr) === shapeOf(COUNT));
    const first = counted ?? exprColumns.find(({ c }) => c.aggregate)!;
    terms = [{ expr: first.c.expr, descending: true, aggregate: true, fields: first.c.fields, attr: 'query__orderBy' }];
  }
  if (!aggregated) {
    const withAggregate = terms.find((t) => t.aggregate);
    if (withAggregate)
      throw new ValidationError(
        'This order has an aggregate (count(), sum(), ...), but no selected column has one: aggregate in "select" to group the events.',
        withAggregate.attr,
      );
    return terms;
  }
  return terms.map((t) => {
    const column = columns.findIndex(
      (c) => c.kind === 'expr' && c.aggregate === t.aggregate && shapeOf(c.expr) === shapeOf(t.expr),
    );
    // An aggregate that is also a column is computed once, for both.
    if (t.aggregate) return column < 0 ? t : { ...t, column };
    if (column < 0)
      throw new ValidationError(
        'When aggregating, an order is an aggregate (count(), sum(), ...) or one of the selected columns the events are grouped by.',
        t.attr,
      );
    return { ...t, column };
  });
}

/** Rows in the events' own time order (read day by day, stopping once the page is full). */
export const isTimeOrder = (terms: readonly EventsOrderTerm[]) =>
  terms.length === 1 && !terms[0]!.aggregate && isField(terms[0]!.expr, 'timestamp');

/**
 * What aggregating cannot take: `*` (every event's own row) and `uuid` (compacted days do not keep
 * it; a group per uuid is a row per event); a `where` with an aggregate needs an aggregated query.
 */
export function checkAggregation(
  columns: readonly EventsColumn[],
  conditions: readonly Condition[],
  order: readonly EventsOrderTerm[],
  aggregated: boolean,
): void {
  if (!aggregated) {
    const having = conditions.find((c) => c.aggregate);
    if (having)
      throw new ValidationError(
        'This "where" expression has an aggregate (count(), sum(), ...), which filters groups: aggregate in "select" to group the events.',
        having.attr,
      );
    return;
  }
  columns.forEach((c, i) => {
    if (c.kind === 'star')
      throw new ValidationError(
        `"${expressionOf(c.label)}" cannot be selected with an aggregate such as count(): the other columns are the group-by, and "*" is each event's own row.`,
        `query__select__${i}`,
      );
  });
  const uses = [...columns.flatMap((c) => (c.kind === 'expr' ? [c] : [])), ...conditions, ...order];
  for (const field of ['uuid', 'created_at']) {
    const use = uses.find((u) => u.fields.some((f) => f.length === 1 && f[0] === field));
    if (use)
      throw new ValidationError(
        `"${field}" cannot be read when aggregating (a group per ${field} is about a row per event; compacted days do not keep it): group by other columns.`,
        use.attr,
      );
  }
}

/** Whether any of these reads the event's person (then persons are looked up for the events it runs on). */
export const readsPerson = (uses: readonly { fields: string[][] }[]) =>
  uses.some((u) => u.fields.some((f) => f[0] === 'person' || f[0] === 'person_id'));

/** The event properties expressions read (the columns an aggregated query decodes). */
export const propertyKeysOf = (uses: readonly { fields: string[][] }[]): string[] => [
  ...new Set(
    uses.flatMap((u) =>
      u.fields.flatMap((f) =>
        f[0] === 'properties' && f.length > 1
          ? [f[1]!]
          : f[0] === '$session_id'
            ? ['$session_id']
            : f[0] === 'elements_chain'
              ? ['$elements_chain']
              : [],
      ),
    ),
  ),
];

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
  // A limit of 0 is no limit given, as PostHog's paginator reads it (`limit if limit and limit > 0 else default`).
  return { limit: limit || DEFAULT_EVENTS_LIMIT, offset: offset ?? 0 };
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

/** What expressions read of an event; `uuid` only on the rows paths (raw events). */
export interface EventFacts {
  uuid?: string;
  /** Ingestion time, ISO UTC (PostHog's `created_at`): raw events only, as uuid. */
  inserted_at?: string;
  event: string;
  distinct_id: string;
  /** Epoch ms. */
  t: number;
  properties: Record<string, unknown>;
}

/**
 * The row adapter HogQL reads an event through: fields as the seam types them (shared/hogql/evaluate.ts),
 * times in the project's time zone, the person's fields from its current properties (PostHog without
 * person-on-events), null without a person.
 */
export function eventReader(e: EventFacts, tz: string, person: PersonCell | undefined): FieldReader {
  return (chain) => {
    switch (chain[0]) {
      case 'event':
        return e.event;
      case 'distinct_id':
        return e.distinct_id;
      case 'uuid':
        return e.uuid ?? null;
      case 'created_at':
        return e.inserted_at ? new HogDateTime(Date.parse(e.inserted_at), tz) : null;
      case 'timestamp':
        return new HogDateTime(e.t, tz);
      case 'properties':
        return propertyPathValue(e.properties, chain.slice(1));
      case '$session_id':
        return propertyPathValue(e.properties, ['$session_id']);
      case 'elements_chain': {
        const chainValue = propertyOf(e.properties, '$elements_chain');
        return typeof chainValue === 'string' ? chainValue : '';
      }
      case 'person_id':
        return person && 'uuid' in person ? person.uuid : null;
      case 'person': {
        if (!person || !('uuid' in person)) return null;
        if (chain[1] === 'properties') return propertyPathValue(person.properties, chain.slice(2));
        if (chain[1] === 'created_at') return new HogDateTime(Date.parse(person.created_at), tz);
        if (chain[1] === 'id') return person.uuid;
        return null;
      }
      default:
        return null;
    }
  };
}

/** The `where` entries without aggregates, ANDed into one test of a row. */
export function compileWhere(conditions: readonly Condition[], ctx: EvalContext): (read: FieldReader) => boolean {
  const tests = conditions
    .filter((c) => !c.aggregate)
    .map((c) => {
      const f = compileScalar(c.expr, ctx, c.attr);
      return (read: FieldReader) => truthy(f(read));
    });
  return (read) => tests.every((t) => t(read));
}

/** The order terms of rows, compiled: each row's key. */
export function compileOrderKey(
  terms: readonly EventsOrderTerm[],
  ctx: EvalContext,
): (read: FieldReader) => HogValue[] {
  const fs = terms.map((t) => compileScalar(t.expr, ctx, t.attr));
  return (read) => fs.map((f) => f(read));
}

/** How a column's value is shown: a bare property as text and a bare `timestamp` as ISO UTC, as before expressions; else cellOf. */
type Show = 'text' | 'utc' | 'value';

const showOf = (expr: Expr): Show =>
  expr.kind === 'field' && expr.chain[0] === 'properties' && expr.chain.length > 1
    ? 'text'
    : isField(expr, 'timestamp')
      ? 'utc'
      : 'value';

function shown(show: Show, v: HogValue): unknown {
  if (show === 'text') return v === null ? null : typeof v === 'string' ? v : propertyText(v);
  if (show === 'utc' && v instanceof HogDateTime) return new Date(v.ms).toISOString();
  return cellOf(v);
}

/** The ClickHouse type of a bare field's column (as PostHog reports them); undefined for other expressions. */
function fieldType(expr: Expr): string | undefined {
  if (expr.kind !== 'field') return undefined;
  if (expr.chain[0] === 'properties') return 'Nullable(String)';
  const types: Record<string, string> = {
    event: 'String',
    distinct_id: 'String',
    uuid: 'UUID',
    timestamp: "DateTime64(6, 'UTC')",
    created_at: "DateTime64(6, 'UTC')",
    elements_chain: 'String',
    $session_id: 'Nullable(String)',
    person_id: 'Nullable(UUID)',
  };
  return expr.chain.length === 1 ? types[expr.chain[0]!] : undefined;
}

const STAR_TYPE =
  "Tuple(UUID, String, String, DateTime64(6, 'UTC'), Int64, String, String, DateTime64(6, 'UTC'), String)";

/**
 * The answer's cells and types from each row's values per column (`*` and `person` columns already
 * shaped; expression columns as HogValues). Types: a bare field's as PostHog reports it, `*` a tuple,
 * `person` String, any other expression from its function or the values answered (expressions.ts typeOf).
 */
export function shapeRows(
  columns: readonly EventsColumn[],
  rows: readonly (readonly unknown[])[],
): { results: unknown[][]; types: string[] } {
  const types = columns.map((c, i) => {
    if (c.kind === 'star') return STAR_TYPE;
    if (c.kind === 'person') return 'String';
    if (c.kind === 'display') return 'Tuple(String, String, String)';
    return (
      fieldType(c.expr) ??
      typeOf(
        c.expr,
        rows.map((r) => r[i] as HogValue),
      )
    );
  });
  const shows = columns.map((c) => (c.kind === 'expr' ? showOf(c.expr) : undefined));
  const results = rows.map((r) => r.map((v, i) => (shows[i] === undefined ? v : shown(shows[i]!, v as HogValue))));
  return { results, types };
}

/** One event's values per column: `*` and `person` shaped, expressions as HogValues (shapeRows shows them). */
export function eventValues(
  columns: readonly EventsColumn[],
  cells: readonly (((read: FieldReader) => HogValue) | undefined)[],
  e: ExplorerEvent,
  projectId: number,
  read: FieldReader,
  person: (distinctId: string) => PersonCell,
): unknown[] {
  return columns.map((c, i) => {
    if (c.kind === 'star') return starCell(e, projectId);
    if (c.kind === 'person') return person(e.distinct_id);
    if (c.kind === 'display') return displayCell(e.distinct_id, person(e.distinct_id));
    return cells[i]!(read);
  });
}

/** Each select column compiled (undefined for `*` and `person`). */
export const compileColumns = (columns: readonly EventsColumn[], ctx: EvalContext) =>
  columns.map((c) => (c.kind === 'expr' && !c.aggregate ? compileScalar(c.expr, ctx, c.attr) : undefined));

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

/** What an aggregated query keeps per group. */
interface Accumulator {
  add(read: FieldReader): void;
  result(): HogValue;
}

/**
 * An aggregated query, compiled: the group key (each non-aggregate column; `person` groups by distinct
 * id), one accumulator per aggregate column, per aggregate `where` entry (HAVING) and per aggregate order term.
 */
export interface Grouping {
  keys: ((read: FieldReader) => HogValue)[];
  aggregates: (() => Accumulator)[];
  /** Per select column: its key's or its aggregate's index. */
  select: ({ key: number } | { aggregate: number })[];
  having: number[];
  order: { from: { key: number } | { aggregate: number }; descending: boolean }[];
}

export function compileGrouping(
  columns: readonly EventsColumn[],
  conditions: readonly Condition[],
  order: readonly EventsOrderTerm[],
  ctx: EvalContext,
): Grouping {
  const g: Grouping = { keys: [], aggregates: [], select: [], having: [], order: [] };
  const aggregate = (expr: Expr, attr: string) => g.aggregates.push(compileAggregate(expr, ctx, attr)) - 1;
  for (const c of columns) {
    if (c.kind === 'star') continue; // refused by checkAggregation
    // One person per distinct id: grouping by it is grouping by the person (shown once the page is known).
    if (c.kind === 'person' || c.kind === 'display')
      g.select.push({ key: g.keys.push((read) => read(['distinct_id'])) - 1 });
    else if (c.aggregate) g.select.push({ aggregate: aggregate(c.expr, c.attr) });
    else {
      const f = compileScalar(c.expr, ctx, c.attr);
      g.select.push({ key: g.keys.push(f) - 1 });
    }
  }
  for (const c of conditions) if (c.aggregate) g.having.push(aggregate(c.expr, c.attr));
  for (const t of order)
    g.order.push({
      from: t.column !== undefined ? g.select[t.column]! : { aggregate: aggregate(t.expr, t.attr) },
      descending: t.descending,
    });
  return g;
}

/** One group's key values and, once the events are added, its aggregates' results. */
export interface Group {
  key: HogValue[];
  accumulators: Accumulator[];
}

/** A group's map key: its values' JSON, or cheaper for the usual one text or number (kinds kept apart by a prefix). */
function groupId(key: readonly HogValue[]): string {
  if (key.length === 1) {
    const v = key[0];
    if (typeof v === 'string') return `s${v}`;
    if (typeof v === 'number') return `n${v}`;
    if (v === null) return 'z';
  }
  return `j${JSON.stringify(key)}`;
}

/** Events added one by one into their groups; more than `maxGroups` distinct groups is a 400 naming the cap. */
export class Groups {
  private readonly groups = new Map<string, Group>();
  constructor(
    private readonly g: Grouping,
    private readonly maxGroups: number,
  ) {}

  add(read: FieldReader): void {
    const key = this.g.keys.map((f) => f(read));
    const id = groupId(key);
    let group = this.groups.get(id);
    if (!group) {
      if (this.groups.size >= this.maxGroups)
        throw new ValidationError(
          `This query has more than ${this.maxGroups.toLocaleString('en-US')} groups, the most one aggregated EventsQuery keeps (ANALYTICS_EVENTS_QUERY_GROUP_LIMIT): group by fewer or coarser columns, or narrow the window or the filters.`,
          'query__select',
        );
      group = { key, accumulators: this.g.aggregates.map((make) => make()) };
      this.groups.set(id, group);
    }
    for (const a of group.accumulators) a.add(read);
  }

  /**
   * The groups HAVING keeps, in the query's order (ties by the group's key, so pages are stable),
   * each as its values per select column. An aggregate over no events (no `where` matched and no
   * group column) is still one row, as SQL answers `SELECT count()` over nothing.
   */
  rows(check: () => void = () => {}): HogValue[][] {
    if (this.groups.size === 0 && this.g.keys.length === 0)
      this.groups.set(groupId([]), { key: [], accumulators: this.g.aggregates.map((make) => make()) });
    const rows: { values: HogValue[]; order: HogValue[]; id: string }[] = [];
    let seen = 0;
    for (const [id, group] of this.groups) {
      seen += 1;
      if (seen % 1024 === 0) check();
      const results = group.accumulators.map((a) => a.result());
      if (!this.g.having.every((i) => truthy(results[i]!))) continue;
      const value = (from: { key: number } | { aggregate: number }) =>
        'key' in from ? group.key[from.key]! : results[from.aggregate]!;
      rows.push({ values: this.g.select.map(value), order: this.g.order.map((o) => value(o.from)), id });
    }
    const compare = compareKeys(this.g.order.map((o) => o.descending));
    rows.sort((a, b) => compare(a.order, b.order) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return rows.map((r) => r.values);
  }
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
