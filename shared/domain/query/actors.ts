import { createHash } from 'node:crypto';
import { now } from '../../clock.ts';
import { config } from '../../config.ts';
import { rememberWalkPosition, walkPosition } from '../../db/actors-walks.ts';
import { personsInCreationOrder, type PersonRecord } from '../../db/persons.ts';
import { ValidationError } from '../../errors.ts';
import { ACTORS_DEFAULT_LIMIT, type ActorsQuery } from '../../schemas/query/actors.ts';
import { personFilterFromQuery, personSearch } from '../person-filters.ts';
import { personResponse } from '../persons.ts';
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

interface Column {
  value: (p: PersonRecord) => unknown;
  type: string;
}

// ---------------------------------------------------------------------------------------------
// Columns and orders: the HogQL expressions PostHog's clients send that persons can answer
// ---------------------------------------------------------------------------------------------

/** PostHog labels columns with a trailing comment (`person_display_name -- Person`). */
const expressionOf = (raw: string) => raw.split('--')[0]!.trim();

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
function personObject(p: PersonRecord) {
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

const SUPPORTED_COLUMNS =
  'person, id, uuid, created_at, distinct_ids, is_identified, properties, properties.<key> (each also with a person. prefix), person_display_name, person.$delete';

function columnOf(raw: string, i: number): Column {
  const expr = expressionOf(raw);
  const name = [expr, expr.replace(/^person\./, '')].find((n) => Object.hasOwn(COLUMNS, n));
  if (name !== undefined && expr !== 'person.person') return COLUMNS[name]!;
  const path = propertyPath(expr);
  if (path) return { value: (p) => propertyAt(p, path), type: 'Nullable(String)' };
  throw new ValidationError(
    `Unsupported column "${raw.slice(0, 100)}": an ActorsQuery over persons can select ${SUPPORTED_COLUMNS}.`,
    `query__select__${i}`,
  );
}

/** Either the persons index's own order (created_at, then id) or a value sorted in memory. */
type Order =
  | { kind: 'created_at'; ascending: boolean; text: string }
  | { kind: 'value'; ascending: boolean; text: string; value: (p: PersonRecord) => unknown };

const SUPPORTED_ORDERS =
  'created_at, properties.<key>, person (its email), person_display_name or id (each also with a person. prefix), then ASC or DESC';

function orderOf(orderBy: string[] | null | undefined): Order {
  const raw = orderBy?.[0];
  // PostHog orders by the first column unless created_at is selected; for its default columns that is
  // the person's uuid, an order with no meaning. Newest first, the persons list's order, is exact at any depth.
  if (raw === undefined) return { kind: 'created_at', ascending: false, text: 'created_at DESC' };
  const m = /^(.*?)(?:\s+(ASC|DESC))?$/i.exec(expressionOf(raw))!;
  const expr = m[1]!.trim();
  const ascending = (m[2] ?? 'ASC').toUpperCase() === 'ASC';
  const text = `${expr} ${ascending ? 'ASC' : 'DESC'}`;
  const bare = expr.replace(/^person\.(?!\$)/, '');
  if (bare === 'created_at') return { kind: 'created_at', ascending, text };
  // PostHog sorts `person` by the first display-name property (email).
  if (expr === 'person') return { kind: 'value', ascending, text, value: (p) => p.properties.email ?? null };
  if (bare === 'id') return { kind: 'value', ascending, text, value: (p) => p.id };
  if (bare === 'person_display_name') return { kind: 'value', ascending, text, value: displayName };
  const path = propertyPath(expr);
  if (path) return { kind: 'value', ascending, text, value: (p) => propertyAt(p, path) };
  throw new ValidationError(
    `Unsupported orderBy "${raw.slice(0, 100)}": an ActorsQuery over persons orders by ${SUPPORTED_ORDERS}.`,
    'query__orderBy__0',
  );
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

/** Rows in a value order: (value, sort key) in the order's direction, nulls last. */
export function compareKeys(order: { ascending: boolean }, a: ValueKey, b: ValueKey): number {
  if (a.missing !== b.missing) return a.missing ? 1 : -1;
  let c = 0;
  if (!a.missing)
    c = a.rank !== b.rank ? a.rank - b.rank : a.rank === 0 ? a.number - b.number : compareText(a.text, b.text);
  if (c === 0) c = compareText(a.sortKey, b.sortKey);
  return order.ascending ? c : -c;
}

// ---------------------------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------------------------

function filterOf(query: ActorsQuery): ((p: PersonRecord) => boolean) | undefined {
  const tests: ((p: PersonRecord) => boolean)[] = [];
  for (const field of ['properties', 'fixedProperties'] as const) {
    const raw = query[field];
    if (raw === undefined || raw === null) continue;
    let predicate: ReturnType<typeof personFilterFromQuery>;
    try {
      predicate = personFilterFromQuery(JSON.stringify(raw));
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      throw new ValidationError(error.detail, `query__${field}${(error.attr ?? '').slice('properties'.length)}`);
    }
    if (predicate) tests.push((p) => predicate(p.properties));
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
  const keyOf = (row: Row) => valueKey(r.order.value(row.person) ?? null, row.sortKey);
  const sorted = sortByKey(all, keyOf, (a, b) => compareKeys(r.order, a, b), r.check);
  const from = r.after === undefined ? undefined : (JSON.parse(r.after) as { value: unknown; sortKey: string });
  const fromKey = from && valueKey(from.value ?? null, from.sortKey);
  const rest = fromKey ? sorted.filter((row) => compareKeys(r.order, row.key, fromKey) > 0) : sorted.slice(r.skip);
  const page = rest.slice(0, r.limit);
  const last = page.at(-1);
  const hasMore = rest.length > r.limit;
  return {
    rows: page.map((row) => row.item),
    hasMore,
    end:
      hasMore && last
        ? JSON.stringify({ value: r.order.value(last.item.person) ?? null, sortKey: last.item.sortKey })
        : undefined,
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
  if (query.source !== undefined && query.source !== null)
    throw new ValidationError(
      'ActorsQuery with a source (actors of an insight, e.g. InsightActorsQuery) is not supported: this service answers ActorsQuery over all persons of the project.',
      'query__source',
    );
  const select = query.select?.length ? query.select : DEFAULT_SELECT;
  const columns = select.map(columnOf);
  const order = orderOf(query.orderBy);
  const matches = filterOf(query);
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
  return {
    results: page.rows.map(({ person }) => columns.map((c) => c.value(person))),
    columns: select,
    types: columns.map((c) => c.type),
    hasMore: page.hasMore,
    limit,
    offset,
    missing_actors_count: hasPerson ? 0 : null,
    hogql: `SELECT ${select.map(expressionOf).join(', ')} FROM persons ORDER BY ${order.text} LIMIT ${limit + 1} OFFSET ${offset}`,
  };
};
