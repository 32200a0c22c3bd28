/**
 * HogQL expressions over a batch's columns, never over event objects. The fields an expression reads
 * fall on a few "dimensions" of the batch: the event name, one property column (`properties.$a.b`
 * reads column `$a`, then the path), the actor (`distinct_id`, `person_id`, `person.properties.*`),
 * or the row's time. An expression over one dictionary-encoded dimension is evaluated once per
 * dictionary entry (as masks.ts answers filters) and spread by index; over several, once per distinct
 * tuple of their indexes (a bounded memo); one reading `timestamp` (not dictionary-encoded) per row.
 * The evaluator itself is the HogQL library's (compileScalar / compileAggregate): this file only
 * decides how often it runs and what each field reads.
 */
import type { Expr } from '#shared/hogql/ast.ts';
import { toText, truth } from '#shared/hogql/convert.ts';
import { compileScalar, type FieldReader } from '#shared/hogql/evaluate.ts';
import { fieldsOf } from '#shared/hogql/index.ts';
import { type EvalContext, HogDateTime, type HogValue } from '#shared/hogql/values.ts';
import { breakdownText } from '../breakdown.ts';
import type { DateContext } from '../dates.ts';
import { type Route, routeOf } from '../hogql.ts';
import type { ColumnBatch } from './batch.ts';

export type { FieldReader };

/** Distinct tuples (or primitive dictionary values, across batches) whose result an expression remembers. */
export const EXPR_MEMO_LIMIT = 65_536;

/**
 * A JSON value as HogQL reads it: strings, numbers, booleans and null as they are; objects and
 * arrays as their JSON text (JSONExtractRaw). `path` walks nested objects (`properties.$a.b`); an
 * integer step indexes an array from 1 (negative from the end), as ClickHouse's JSONExtract does.
 */
export function jsonField(value: unknown, path: readonly string[]): HogValue {
  let v = value;
  for (const step of path) {
    if (Array.isArray(v) && /^-?\d+$/.test(step)) {
      const i = Number(step);
      v = i > 0 ? v[i - 1] : i < 0 ? v[v.length + i] : undefined;
    } else if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.hasOwn(v, step)) {
      v = (v as Record<string, unknown>)[step];
    } else return null;
  }
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  return JSON.stringify(v);
}

/** An expression ready to run on batches: the library's compiled closure and the fields it reads. */
export interface ColumnExpr {
  readonly run: (read: FieldReader) => HogValue;
  readonly routes: ReadonlyMap<string, Route>;
  readonly timezone: string;
  /** Single-property-column expressions: result per primitive dictionary value, kept across batches. */
  readonly memo: Map<unknown, HogValue>;
}

const chainKey = (chain: readonly string[]) => chain.join('\u0000');

/** What an expression may read besides its row: the project's time zone and the request's clock. */
export const evalContextOf = (ctx: DateContext): EvalContext => ({ timezone: ctx.tz, now: new Date(ctx.now) });

/** A plain (non-aggregate) expression compiled for the columnar engine. */
export function compileColumnExpr(expr: Expr, ctx: EvalContext, attr: string): ColumnExpr {
  return columnExpr(compileScalar(expr, ctx, attr), fieldsOf(expr), ctx.timezone);
}

/** `fields`: every field chain the expression reads (the library's fieldsOf). */
export function columnExpr(
  run: (read: FieldReader) => HogValue,
  fields: readonly (readonly string[])[],
  timezone: string,
): ColumnExpr {
  const routes = new Map<string, Route>();
  for (const chain of fields) {
    const route = routeOf(chain);
    if (route) routes.set(chainKey(chain), route);
  }
  return { run, routes, timezone, memo: new Map() };
}

// ---------------------------------------------------------------------------------------------
// One batch

/** A dictionary-encoded dimension of one batch: row i is entry `indexes[i]` (entry 0 for every row when null). */
interface Dim {
  id: string;
  size: number;
  indexes: Uint32Array | null;
}

/** How one field reads a dimension's entry (or, for time, a row). Values are computed once per entry, on first use. */
interface Accessor {
  dim: number;
  value(entry: number): HogValue;
}

/** A value per row without a per-row array of values: row i has `table[indexes[i]]` (`table[0]` for every row when null). */
export interface ValueColumn {
  table: HogValue[];
  indexes: Uint32Array | null;
}

class BatchFields {
  readonly dims: Dim[] = [];
  private readonly accessors = new Map<string, Accessor>();
  /** Per dimension, the entry the reader is on (for time: the row). */
  readonly at: Int32Array;
  readonly read: FieldReader;
  readonly perRow: boolean;

  constructor(
    readonly batch: ColumnBatch,
    readonly expr: ColumnExpr,
  ) {
    const dimOf = (id: string, size: number, indexes: Uint32Array | null) => {
      let d = this.dims.findIndex((x) => x.id === id);
      if (d < 0) d = this.dims.push({ id, size, indexes }) - 1;
      return d;
    };
    for (const [key, route] of expr.routes) this.accessors.set(key, this.accessorOf(route, dimOf));
    this.perRow = this.dims.some((d) => d.id === 'time');
    this.at = new Int32Array(this.dims.length);
    const byIdentity = new Map<readonly string[], Accessor | undefined>();
    this.read = (chain) => {
      let accessor = byIdentity.get(chain);
      if (accessor === undefined && !byIdentity.has(chain)) {
        accessor = this.accessors.get(chainKey(chain));
        byIdentity.set(chain, accessor);
      }
      return accessor ? accessor.value(this.at[accessor.dim]!) : null;
    };
  }

  private accessorOf(route: Route, dimOf: (id: string, size: number, indexes: Uint32Array | null) => number): Accessor {
    const { batch } = this;
    if (route.dim === 'time') {
      const d = dimOf('time', batch.n, null);
      const { time, base } = batch;
      const tz = this.expr.timezone;
      return { dim: d, value: (row) => new HogDateTime(base + time[row]!, tz) };
    }
    if (route.dim === 'event') {
      const d = dimOf('event', batch.names.length, batch.nameIndexes);
      return { dim: d, value: (e) => batch.names[e] ?? null };
    }
    if (route.dim === 'actor') {
      const d = dimOf('actor', batch.actors.length, batch.actorIndexes);
      if (route.read === 'person') return { dim: d, value: (e) => batch.actors[e]?.person ?? null };
      if (route.read === 'distinct_id') return { dim: d, value: (e) => batch.distinctIds?.[e] ?? null };
      const { key, path } = route;
      return cached(d, batch.actors.length, (e) => {
        const props = batch.actors[e]?.properties;
        return props && Object.hasOwn(props, key) ? jsonField(props[key], path) : null;
      });
    }
    const column = batch.columns.get(route.key);
    const d = dimOf(`p:${route.key}`, (column?.dictionary.length ?? 0) + 1, column?.indexes ?? null);
    const { path, missing } = route;
    const dictionary = column?.dictionary ?? [];
    return cached(d, dictionary.length + 1, (e) =>
      e === 0 ? missing : (jsonField(dictionary[e - 1], path) ?? missing),
    );
  }
}

/** An accessor computing each entry's value once (a nested path or an object's JSON text costs more than a lookup). */
function cached(dim: number, size: number, compute: (entry: number) => HogValue): Accessor {
  const values = new Array<HogValue | undefined>(size);
  return {
    dim,
    value(entry) {
      let v = values[entry];
      if (v === undefined) values[entry] = v = compute(entry);
      return v;
    },
  };
}

/** Memo keys: a row without the property; and a stand-in for values not remembered (objects, non-property dimensions). */
const MISSING = Symbol('missing');
const OBJECT = {};

const identity = (n: number) => {
  const indexes = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) indexes[i] = i;
  return indexes;
};

/**
 * The expression's value on every row of a batch: once per dictionary entry of its one dimension,
 * once per distinct tuple of entries of several (remembered up to EXPR_MEMO_LIMIT tuples, then per
 * row), per row when it reads the time, once when it reads nothing.
 */
export function valuesOf(expr: ColumnExpr, batch: ColumnBatch): ValueColumn {
  const fields = new BatchFields(batch, expr);
  const { dims, at } = fields;
  const run = () => expr.run(fields.read);
  if (dims.length === 0) return { table: [run()], indexes: null };
  if (fields.perRow) {
    const table = new Array<HogValue>(batch.n);
    for (let i = 0; i < batch.n; i += 1) {
      for (let d = 0; d < dims.length; d += 1) at[d] = dims[d]!.id === 'time' ? i : (dims[d]!.indexes?.[i] ?? 0);
      table[i] = run();
    }
    return { table, indexes: identity(batch.n) };
  }
  if (dims.length === 1) {
    const dim = dims[0]!;
    const table = new Array<HogValue>(dim.size);
    const dictionary = dim.id.startsWith('p:') ? batch.columns.get(dim.id.slice(2))?.dictionary : undefined;
    for (let e = 0; e < dim.size; e += 1) {
      at[0] = e;
      // A property value seen in an earlier batch (each segment chunk repeats its dictionary) is not evaluated again.
      const raw = !dictionary && !dim.id.startsWith('p:') ? OBJECT : e === 0 ? MISSING : dictionary![e - 1];
      if (typeof raw !== 'object' || raw === null) {
        let v = expr.memo.get(raw);
        if (v === undefined && !expr.memo.has(raw)) {
          v = run();
          if (expr.memo.size < EXPR_MEMO_LIMIT) expr.memo.set(raw, v);
        }
        table[e] = v as HogValue;
      } else table[e] = run();
    }
    return { table, indexes: dim.indexes };
  }
  return tupleValues(fields, run);
}

/** Tuple keys up to this many are the table's index themselves (a table of that many entries, most of them unused). */
const DENSE_TUPLES = 1 << 16;

/**
 * Several dimensions: one evaluation per distinct tuple of their entries. A tuple's key is a
 * mixed-radix number of its entries; when the keys are few, a row's key is its index into the table
 * (one pass of integer arithmetic over the rows, then one evaluation per key that occurs), else a
 * hash memo maps keys to table slots.
 */
function tupleValues(fields: BatchFields, run: () => HogValue): ValueColumn {
  const { dims } = fields;
  let radix = 1;
  for (const d of dims) radix *= d.size;
  return radix <= DENSE_TUPLES ? denseTuples(fields, run, radix) : hashedTuples(fields, run, radix);
}

function denseTuples(fields: BatchFields, run: () => HogValue, radix: number): ValueColumn {
  const { dims, at, batch } = fields;
  const n = batch.n;
  const indexes = new Uint32Array(n);
  const seen = new Uint8Array(radix);
  if (dims.length === 2) {
    // The common case (two columns): one multiply-add per row.
    const a = dims[0]!.indexes;
    const b = dims[1]!.indexes;
    const size = dims[0]!.size;
    for (let i = 0; i < n; i += 1) {
      const key = (b === null ? 0 : b[i]!) * size + (a === null ? 0 : a[i]!);
      indexes[i] = key;
      seen[key] = 1;
    }
  } else {
    for (let i = 0; i < n; i += 1) {
      let key = 0;
      for (let d = dims.length - 1; d >= 0; d -= 1) key = key * dims[d]!.size + (dims[d]!.indexes?.[i] ?? 0);
      indexes[i] = key;
      seen[key] = 1;
    }
  }
  const table = new Array<HogValue>(radix).fill(null);
  for (let key = 0; key < radix; key += 1) {
    if (seen[key] === 0) continue;
    let rest = key;
    for (let d = 0; d < dims.length; d += 1) {
      at[d] = rest % dims[d]!.size;
      rest = Math.floor(rest / dims[d]!.size);
    }
    table[key] = run();
  }
  return { table, indexes };
}

function hashedTuples(fields: BatchFields, run: () => HogValue, radix: number): ValueColumn {
  const { dims, at, batch } = fields;
  const n = batch.n;
  // Beyond exact doubles (several huge dictionaries) the key would collide: evaluate per row instead.
  const exact = radix <= Number.MAX_SAFE_INTEGER;
  const memo = new Map<number, number>();
  const table: HogValue[] = [];
  const indexes = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) {
    let key = 0;
    for (let d = dims.length - 1; d >= 0; d -= 1) key = key * dims[d]!.size + (dims[d]!.indexes?.[i] ?? 0);
    if (exact) {
      const found = memo.get(key);
      if (found !== undefined) {
        indexes[i] = found;
        continue;
      }
    }
    for (let d = 0; d < dims.length; d += 1) at[d] = dims[d]!.indexes?.[i] ?? 0;
    const slot = table.push(run()) - 1;
    if (exact && memo.size < EXPR_MEMO_LIMIT) memo.set(key, slot);
    indexes[i] = slot;
  }
  return { table, indexes };
}

/**
 * A row reader for aggregates (math hogql): `at(i)` moves it to row i of the batch. Field values are
 * still computed once per dictionary entry; only the aggregate's own work is per row.
 */
export function rowReaderOf(expr: ColumnExpr, batch: ColumnBatch): { read: FieldReader; at(row: number): void } {
  const fields = new BatchFields(batch, expr);
  const { dims, at } = fields;
  return {
    read: fields.read,
    at(row) {
      for (let d = 0; d < dims.length; d += 1) at[d] = dims[d]!.id === 'time' ? row : (dims[d]!.indexes?.[row] ?? 0);
    },
  };
}

/** Whether a value lets a row through a filter: the library's condition truth (WHERE), NULL failing. */
export const passes = (v: HogValue): boolean => truth(v) === true;

/**
 * A HogQL value as a breakdown value (the breakdown values rule of shared/trends/README.md): strings
 * as they are, numbers via String, booleans `true`/`false`, null and `''` → None; dates, arrays and
 * tuples as HogQL's toString prints them.
 */
export function breakdownOf(v: HogValue): string {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return breakdownText(v);
  return breakdownText(toText(v));
}
