import { createHash } from 'node:crypto';
import { now } from '../../clock.ts';
import { config } from '../../config.ts';
import { rememberWalkPosition, walkPosition } from '../../db/actors-walks.ts';
import { personsInCreationOrder, type PersonRecord } from '../../db/persons.ts';
import { ValidationError } from '../../errors.ts';
import {
  compileScalar,
  type EvalContext,
  type Expr,
  type FieldReader,
  HogDate,
  HogDateTime,
  HogTuple,
  type HogValue,
} from '../../hogql/index.ts';
import { ACTORS_DEFAULT_LIMIT, type ActorsQuery } from '../../schemas/query/actors.ts';
import { personFilter, personSearch } from '../person-filters.ts';
import { personResponse } from '../persons.ts';
import { projectSettings } from '../projects.ts';
import {
  cellOf,
  expressionOf,
  type ParsedColumn,
  parseColumn,
  parseOrderTerm,
  propertyPathValue,
  typeOf,
} from './expressions.ts';
import type { Checkpoint } from './checkpoint.ts';
import type { QueryContext, QueryRunner } from './runner.ts';
import { sortByKey } from './sort.ts';

/** PostHog's columns when `select` is absent (its PersonStrategy). */
const DEFAULT_SELECT = ['person', 'id', 'person.$delete'];
/** How long a walk's page positions are remembered (each page renews its own). */
export const WALK_TTL_SECONDS = 3600;
/** Persons per index read while filtering or skipping, and reads per request (each up to 1 MB, as the persons list). */
const READ_SIZE = 500;
const MAX_READS = 40;
const MAX_POSITION_CHARS = 100_000;

type Row = { person: PersonRecord; sortKey: string };

/** A named column (its ClickHouse type as PostHog reports it) or an expression (typed from its values). */
type Column =
  | { value: (p: PersonRecord) => unknown; type: string; expr?: undefined }
  | { value: (p: PersonRecord) => HogValue; expr: Expr; type?: undefined };

// ---------------------------------------------------------------------------------------------
// Columns and orders: PostHog's named columns, and HogQL expressions over the person's fields
// ---------------------------------------------------------------------------------------------

/** The fields of a person an expression reads. */
const PERSON_FIELDS = 'id, created_at, is_identified, properties.<key> (each also with a person. prefix)';

/** The row adapter expressions read a person through (times in the project's time zone). */
function personReader(p: PersonRecord, tz: string): FieldReader {
  return (chain) => {
    const rest = chain[0] === 'person' && chain.length > 1 ? chain.slice(1) : chain;
    switch (rest[0]) {
      case 'properties':
        return propertyPathValue(p.properties, rest.slice(1));
      case 'id':
        return p.id;
      case 'uuid':
        return p.uuid;
      case 'created_at':
        return new HogDateTime(Date.parse(p.created_at), tz);
      case 'is_identified':
        return p.is_identified;
      default:
        return null;
    }
  };
}

/** `properties.a`, `person.properties.a`, `` properties.`a b` ``, `properties.a.b` (nested): the key path, or undefined. */
function propertyPath(expr: string): string[] | undefined {
  const rest = /^(?:person\.)?properties\.(.+)$/.exec(expr)?.[1];
  if (rest === undefined) return undefined;
  const path: string[] = [];
  const part = /(`[^`]+`|[^.`\s]+)(\.|$)/y;
  let at = 0;
  while (at < rest.length) {
    part.lastIndex = at;
    const m = part.exec(rest);
    if (!m) return undefined;
    path.push(m[1]!.startsWith('`') ? m[1]!.slice(1, -1) : m[1]!);
    at = part.lastIndex;
    if (m[2] === '.' && at === rest.length) return undefined;
  }
  return path;
}

function propertyAt(p: PersonRecord, path: string[]): unknown {
  let value: unknown = p.properties;
  for (const key of path) {
    if (!value || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return null;
    value = (value as Record<string, unknown>)[key];
  }
  return value ?? null;
}

const displayName = (p: PersonRecord) => personResponse(p).name;

/** The person as PostHog's actors answer it, with the spec's integer id (and the uuid beside it). */
export function personObject(p: PersonRecord) {
  const r = personResponse(p);
  return {
    id: r.id,
    uuid: r.uuid,
    distinct_ids: r.distinct_ids,
    properties: r.properties,
    is_identified: p.is_identified,
    created_at: r.created_at,
  };
}

const COLUMNS: Record<string, Column> = {
  person: { value: personObject, type: 'Int64' },
  id: { value: (p) => p.id, type: 'Int64' },
  uuid: { value: (p) => p.uuid, type: 'UUID' },
  created_at: { value: (p) => p.created_at, type: "DateTime64(6, 'UTC')" },
  distinct_ids: { value: (p) => personResponse(p).distinct_ids, type: 'Array(String)' },
  is_identified: { value: (p) => p.is_identified, type: 'Bool' },
  properties: { value: (p) => p.properties, type: 'String' },
  'person.$delete': { value: () => 1, type: 'UInt8' },
  person_display_name: {
    value: (p) => ({ display_name: displayName(p), id: String(p.id) }),
    type: 'Tuple(String, String)',
  },
};

/** A HogQL expression over the person (aggregates refused: an ActorsQuery over persons has a row per person). */
function expressionOver(
  raw: string,
  parsed: ParsedColumn,
  attr: string,
  ctx: EvalContext,
): (p: PersonRecord) => HogValue {
  if (parsed.aggregate)
    throw new ValidationError(
      `"${raw.slice(0, 100)}" has an aggregate (count(), sum(), ...): an ActorsQuery over persons answers a row per person, so its columns and orders are expressions over ${PERSON_FIELDS}.`,
      attr,
    );
  const f = compileScalar(parsed.expr, ctx, attr);
  return (p) => f(personReader(p, ctx.timezone));
}

function columnOf(raw: string, i: number, ctx: EvalContext): Column {
  const expr = expressionOf(raw);
  const name = [expr, expr.replace(/^person\./, '')].find((n) => Object.hasOwn(COLUMNS, n));
  if (name !== undefined && expr !== 'person.person') return COLUMNS[name]!;
  const path = propertyPath(expr);
  if (path) return { value: (p) => propertyAt(p, path), type: 'Nullable(String)' };
  const attr = `query__select__${i}`;
  const parsed = parseColumn(raw, 'persons', attr);
  const value = expressionOver(raw, parsed, attr, ctx);
  return { value, expr: parsed.expr };
}

/** One term of a value order: how a person's value is read for it, and which way it runs. */
interface Term {
  ascending: boolean;
  text: string;
  value: (p: PersonRecord) => unknown;
}

/** Either the persons index's own order (created_at, then id) or values sorted in memory, term by term. */
type Order = { kind: 'created_at'; ascending: boolean; text: string } | { kind: 'value'; terms: Term[]; text: string };

/** A HogQL value as the value order compares it (and a walk position stores it, as JSON): times as instants. */
function orderable(v: HogValue): unknown {
  if (v instanceof HogDateTime) return v.ms;
  if (v instanceof HogDate) return v.days;
  if (v instanceof HogTuple) return v.items.map(orderable);
  if (Array.isArray(v)) return v.map(orderable);
  return v;
}

function termOf(raw: string, i: number, ctx: EvalContext): Term | 'created_at' {
  const m = /^(.*?)(?:\s+(ASC|DESC))?$/is.exec(expressionOf(raw))!;
  const expr = m[1]!.trim();
  // PostHog's UI sends a labelled column's order with the direction after the label: `person_display_name -- Person DESC`.
  const direction = m[2] ?? /--.*\s(ASC|DESC)\s*$/is.exec(raw)?.[1] ?? 'ASC';
  const ascending = direction.toUpperCase() === 'ASC';
  const text = `${expr} ${ascending ? 'ASC' : 'DESC'}`;
  const bare = expr.replace(/^person\.(?!\$)/, '');
  if (bare === 'created_at') return 'created_at';
  // PostHog sorts `person` by the first display-name property (email).
  if (expr === 'person') return { ascending, text, value: (p) => p.properties.email ?? null };
  if (bare === 'id') return { ascending, text, value: (p) => p.id };
  if (bare === 'person_display_name') return { ascending, text, value: displayName };
  const path = propertyPath(expr);
  if (path) return { ascending, text, value: (p) => propertyAt(p, path) };
  const attr = `query__orderBy__${i}`;
  const term = parseOrderTerm(raw, 'persons', attr);
  const value = expressionOver(raw, { ...term, alias: undefined }, attr, ctx);
  return {
    ascending: !term.descending,
    text: `${printed(raw)} ${term.descending ? 'DESC' : 'ASC'}`,
    value: (p) => orderable(value(p)),
  };
}

/** An order entry's expression text without its direction and label (for the answer's hogql and the walk's identity). */
const printed = (raw: string) => expressionOf(raw).replace(/\s+(ASC|DESC)$/i, '');

function orderOf(orderBy: string[] | null | undefined, ctx: EvalContext): Order {
  // PostHog orders by the first column unless created_at is selected; for its default columns that is
  // the person's uuid, an order with no meaning. Newest first, the persons list's order, is exact at any depth.
  if (!orderBy?.length) return { kind: 'created_at', ascending: false, text: 'created_at DESC' };
  const parsed = orderBy.map((raw, i) => termOf(raw, i, ctx));
  const terms = parsed.map((term, i): Term => {
    if (term !== 'created_at') return term;
    const ascending = !/\sDESC\s*$/i.test(orderBy[i]!);
    return { ascending, text: `created_at ${ascending ? 'ASC' : 'DESC'}`, value: (p) => p.created_at };
  });
  const text = terms.map((t) => t.text).join(', ');
  // created_at alone is the index's own order: read from a position, exact at any depth.
  if (parsed.length === 1 && parsed[0] === 'created_at')
    return { kind: 'created_at', ascending: terms[0]!.ascending, text };
  return { kind: 'value', terms, text };
}

/**
 * A row's place in a value order, computed once per row: null and missing last either way (as
 * ClickHouse), then numbers, then strings, then anything else (as JSON, stringified here once).
 */
export interface ValueKey {
  missing: boolean;
  rank: number;
  number: number;
  text: string;
  sortKey: string;
}

export function valueKey(value: unknown, sortKey: string): ValueKey {
  const missing = value === null || value === undefined;
  const rank = typeof value === 'number' ? 0 : typeof value === 'string' ? 1 : 2;
  return {
    missing,
    rank,
    number: rank === 0 ? (value as number) : 0,
    text: missing || rank === 0 ? '' : rank === 1 ? (value as string) : JSON.stringify(value),
    sortKey,
  };
}

const compareText = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

/** Two non-missing values of a term, ascending. */
function compareValues(a: ValueKey, b: ValueKey): number {
  return a.rank !== b.rank ? a.rank - b.rank : a.rank === 0 ? a.number - b.number : compareText(a.text, b.text);
}

/** Rows in a value order: (value, sort key) in the order's direction, nulls last. */
export function compareKeys(order: { ascending: boolean }, a: ValueKey, b: ValueKey): number {
  return compareTerms([order], [a], [b]);
}

/**
 * Rows in a value order of several terms: term by term, each in its direction with nulls last either
 * way (as ClickHouse), then by the rows' sort key in the first term's direction (so no two rows tie).
 */
export function compareTerms(
  terms: readonly { ascending: boolean }[],
  a: readonly ValueKey[],
  b: readonly ValueKey[],
): number {
  for (let i = 0; i < terms.length; i += 1) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.missing !== y.missing) return x.missing ? 1 : -1;
    const c = x.missing ? 0 : compareValues(x, y);
    if (c !== 0) return terms[i]!.ascending ? c : -c;
  }
  const c = compareText(a[0]!.sortKey, b[0]!.sortKey);
  return terms[0]!.ascending ? c : -c;
}

// ---------------------------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------------------------

async function filterOf(projectId: number, query: ActorsQuery): Promise<((p: PersonRecord) => boolean) | undefined> {
  const tests: ((p: PersonRecord) => boolean)[] = [];
  for (const field of ['properties', 'fixedProperties'] as const) {
    const raw = query[field];
    if (raw === undefined || raw === null) continue;
    let predicate: (properties: Record<string, unknown>, personId?: number) => boolean;
    try {
      predicate = (await personFilter(projectId, JSON.stringify(raw)))!;
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      throw new ValidationError(error.detail, `query__${field}${(error.attr ?? '').slice('properties'.length)}`);
    }
    tests.push((p) => predicate(p.properties, p.id));
  }
  if (query.search) tests.push(personSearch(query.search));
  return tests.length ? (p) => tests.every((t) => t(p)) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------------------------------

interface PageRequest {
  projectId: number;
  order: Order;
  matches?: (p: PersonRecord) => boolean;
  limit: number;
  /** Matches to skip first: the offset, when no position of this walk was remembered for it. */
  skip: number;
  /** Where the page starts (exclusive): the previous page's end, remembered for this walk. */
  after?: string;
  check: Checkpoint;
  query: ActorsQuery;
}

interface Page {
  rows: Row[];
  hasMore: boolean;
  /** The position the next page starts after, when there is one. */
  end?: string;
}

const scanLimit = () => config().personScanLimit;

/**
 * A page in the index's order, read from its position on: the rows and one more (to know whether
 * more exist), skipping `skip` matches first. It reads at most `scanLimit` persons besides its rows.
 */
async function indexPage(r: PageRequest & { order: { kind: 'created_at' } }): Promise<Page> {
  const budget = scanLimit() + r.limit + 1;
  const rows: Row[] = [];
  let after = r.after;
  let skipped = 0;
  let examined = 0;
  let reads = 0;
  let exhausted = false;
  while (rows.length <= r.limit && examined < budget && reads < MAX_READS) {
    r.check();
    const wanted = r.matches ? READ_SIZE : r.skip - skipped + r.limit + 1 - rows.length;
    const out = await personsInCreationOrder(r.projectId, {
      ascending: r.order.ascending,
      limit: Math.min(READ_SIZE, wanted, budget - examined),
      after,
    });
    reads += 1;
    for (const row of out.persons) {
      if (rows.length > r.limit) break;
      examined += 1;
      after = row.sortKey;
      if (r.matches && !r.matches(row.person)) continue;
      if (skipped < r.skip) skipped += 1;
      else rows.push(row);
    }
    if (!out.more && rows.length <= r.limit) {
      exhausted = true;
      break;
    }
  }
  const page = rows.slice(0, r.limit);
  if (page.length < r.limit && !exhausted) throw overBudget(r, skipped < r.skip);
  const hasMore = rows.length > r.limit || !exhausted;
  return { rows: page, hasMore, end: hasMore ? page.at(-1)?.sortKey : undefined };
}

/** A page in a value's order: every person of the project read and sorted (at most `scanLimit` of them). */
async function valuePage(r: PageRequest & { order: Extract<Order, { kind: 'value' }> }): Promise<Page> {
  const all: Row[] = [];
  let after: string | undefined;
  let reads = 0;
  let examined = 0;
  for (;;) {
    if (reads >= MAX_READS || examined > scanLimit()) throw overBudget(r, false);
    r.check();
    const out = await personsInCreationOrder(r.projectId, {
      ascending: true,
      limit: Math.min(READ_SIZE, scanLimit() + 1 - examined),
      after,
    });
    reads += 1;
    for (const row of out.persons) {
      examined += 1;
      after = row.sortKey;
      if (!r.matches || r.matches(row.person)) all.push(row);
    }
    if (!out.more) break;
  }
  const { terms } = r.order;
  const keysOf = (values: readonly unknown[], sortKey: string) => values.map((v) => valueKey(v ?? null, sortKey));
  const valuesOf = (p: PersonRecord) => terms.map((t) => t.value(p) ?? null);
  const sorted = sortByKey(
    all,
    (row) => keysOf(valuesOf(row.person), row.sortKey),
    (a, b) => compareTerms(terms, a, b),
    r.check,
  );
  // A position written before orders had several terms holds one `value`.
  const from =
    r.after === undefined
      ? undefined
      : (JSON.parse(r.after) as { values?: unknown[]; value?: unknown; sortKey: string });
  const fromKey = from && keysOf(from.values ?? [from.value], from.sortKey);
  const rest = fromKey ? sorted.filter((row) => compareTerms(terms, row.key, fromKey) > 0) : sorted.slice(r.skip);
  const page = rest.slice(0, r.limit);
  const last = page.at(-1);
  const hasMore = rest.length > r.limit;
  return {
    rows: page.map((row) => row.item),
    hasMore,
    end:
      hasMore && last ? JSON.stringify({ values: valuesOf(last.item.person), sortKey: last.item.sortKey }) : undefined,
  };
}

function overBudget(r: PageRequest, skipping: boolean): ValidationError {
  const cap = scanLimit().toLocaleString('en-US');
  if (r.order.kind === 'value')
    return new ValidationError(
      `Ordering by "${r.order.text}" sorts the project's persons in memory, and a request reads at most ${cap} persons (ANALYTICS_PERSON_SCAN_LIMIT); this project has more. Order by created_at (exact at any depth) instead.`,
      'query__orderBy__0',
    );
  if (skipping)
    return new ValidationError(
      `This offset does not continue a walk (the page before it was not served to you for this query within the last hour), so it is reached by reading the persons before it, and a request reads at most ${cap} persons besides its rows (ANALYTICS_PERSON_SCAN_LIMIT). Walk the pages in order from offset 0 (each page then starts where the previous one ended, at any depth).`,
      'query__offset',
    );
  return new ValidationError(
    `The filters matched fewer than ${r.limit} of the ${cap} persons a request may read besides its rows (ANALYTICS_PERSON_SCAN_LIMIT), so this page cannot be filled; narrow the filters or ask for a smaller limit.`,
    r.query.search ? 'query__search' : 'query__properties',
  );
}

// ---------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------

/** One walk = one caller asking one question (order and filters); the page size and columns may change along it. */
function walkOf(context: QueryContext, query: ActorsQuery, order: Order): string {
  const question = [
    context.membership.user_id,
    order.text,
    query.search ?? null,
    query.properties ?? null,
    query.fixedProperties ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(question)).digest('hex');
}

/**
 * ActorsQuery over persons. Pages are read from a position, not counted from the start: the page at
 * `offset` starts where this caller's page ending at `offset` ended (remembered for an hour per
 * caller and question), so a walk by offsets sees every person exactly once however many persons are
 * created meanwhile; an offset no page ended at is reached by skipping, within the scan limit.
 */
export const runActorsQuery: QueryRunner<'ActorsQuery'> = async (context, query) => {
  const select = query.select?.length ? query.select : DEFAULT_SELECT;
  const ctx: EvalContext = { timezone: projectSettings(context.project).timezone, now: now() };
  const columns = select.map((raw, i) => columnOf(raw, i, ctx));
  const order = orderOf(query.orderBy, ctx);
  const matches = await filterOf(context.projectId, query);
  const limit = query.limit ?? ACTORS_DEFAULT_LIMIT;
  const offset = query.offset ?? 0;
  const walk = walkOf(context, query, order);
  const at = now();
  const after = offset > 0 ? await walkPosition(context.projectId, walk, offset, at) : undefined;
  const request = {
    projectId: context.projectId,
    matches,
    limit,
    skip: after === undefined ? offset : 0,
    after,
    check: context.check,
    query,
  };
  const page =
    order.kind === 'created_at' ? await indexPage({ ...request, order }) : await valuePage({ ...request, order });
  // A value order's position holds the value: one too large for an item is not kept (that walk's next page is found by offset).
  if (page.end !== undefined && page.end.length <= MAX_POSITION_CHARS)
    await rememberWalkPosition(context.projectId, walk, offset + limit, page.end, at, WALK_TTL_SECONDS);
  const hasPerson = select.some((c) => expressionOf(c) === 'person');
  const values = page.rows.map(({ person }) => columns.map((c) => c.value(person)));
  return {
    results: values.map((row) => row.map((v, i) => (columns[i]!.expr ? cellOf(v as HogValue) : v))),
    columns: select,
    types: columns.map(
      (c, i) =>
        c.type ??
        typeOf(
          c.expr,
          values.map((row) => row[i] as HogValue),
        ),
    ),
    hasMore: page.hasMore,
    limit,
    offset,
    missing_actors_count: hasPerson ? 0 : null,
    hogql: `SELECT ${select.map(expressionOf).join(', ')} FROM persons ORDER BY ${order.text} LIMIT ${limit + 1} OFFSET ${offset}`,
  };
};
