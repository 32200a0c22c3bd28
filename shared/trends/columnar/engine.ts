/**
 * The trend engine over columns (DuckDB/ClickHouse style, over the segments' dictionary encoding):
 * batches are visited one at a time and folded into per-(series, period) aggregates; nothing holds a
 * row object. Per batch, each series' filters become a byte mask (masks.ts), breakdown values a group
 * ordinal per dictionary entry, persons an integer ordinal per actor, and each row lands in its bucket
 * by comparing its time with the period's precomputed bucket starts (one time-zone computation per
 * boundary, none per event).
 *
 * Aggregates: counts and sum/avg/min/max fold into per-(group, bucket) cells as batches go (dense
 * typed arrays within a per-query budget, past it a hash table of the cells that occur); maths that
 * need the values themselves keep compact typed entries (group, bucket, operand, and the time for
 * windows): one per (person or session, group, bucket) for distinct counts and the trailing
 * active-user windows, one per matching row for percentiles and per-actor counts. They are reduced
 * when every batch has been seen. Breakdown values are ranked once the period's volumes are known, so
 * the top values and "Other" come out of the same cells (Other = the math over the remaining values'
 * cells or entries, never a sum of rows).
 */
import { textOf } from '#shared/errors.ts';
import { compileAggregate, type EvalContext, fieldsOf } from '#shared/hogql/index.ts';
import { breakdownText } from '../breakdown.ts';
import type { CohortSets } from '../cohort-filters.ts';
import {
  actionOf,
  indexActions,
  parseStoredFilters,
  periodsFor,
  projectContext,
  readFrom,
  resolveDateRange,
  testAccountFilters,
} from '../compute.ts';
import type { DateContext, Period } from '../dates.ts';
import { actorGroupOf, type GroupLookup, groupColumn, groupKeyText, NO_GROUPS, requiredGroupOf } from '../groups.ts';
import { windowStart } from '../dates.ts';
import { ACTIVE_WINDOW_DAYS, type RowValues, windowDays } from '../math.ts';
import type { BreakdownModel, SeriesModel, TrendsModel } from '../model.ts';
import { buildResponse, type PeriodResult } from '../output.ts';
import { type FilterLookups, propertyOf, toNumber } from '../properties.ts';
import {
  AGGREGATED_DISPLAYS,
  COUNT_PER_ACTOR_MATHS,
  PROPERTY_MATHS,
  type ActionDefinition,
  type Interval,
  type ProjectSettings,
  type SeriesMath,
  type TrendResponse,
} from '../types.ts';
import type { ColumnBatch, ColumnSource } from './batch.ts';
import { bucketOf } from './buckets.ts';
import { breakdownOf, type ColumnExpr, columnExpr, compileColumnExpr, evalContextOf, valuesOf } from './expressions.ts';
import { type Aggregate, AggregateCells } from './hogql-math.ts';
import { ALL, andNode, evaluate, groupNode, hasGroupNode, type Mask, type MaskNode } from './masks.ts';
import { type Ranking, rankGroups } from './rank.ts';

export interface ColumnarInput {
  source: ColumnSource;
  project: ProjectSettings;
  actions: ActionDefinition[];
  now: Date;
  firstEventAt?: Date;
  /** The current properties of the groups the query reads (group filters, group breakdown); none without. */
  groups?: GroupLookup;
  /** The members of every cohort the query names (filters, breakdown), loaded once per query. */
  cohorts?: CohortSets;
  /** Dense aggregate cells allowed per query (default DENSE_CELLS); tests lower it to exercise the hash table. */
  denseCells?: number;
}

/** 2M cells of 8 bytes: 16 MB of dense counters (and as much of volumes) at most, whatever the breakdown's cardinality. */
export const DENSE_CELLS = 2 ** 21;

// ---------------------------------------------------------------------------------------------
// Small helpers

/** A growable list of doubles (session spans). */
class FloatList {
  data = new Float64Array(1024);
  length = 0;
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }
}

/** Interned strings: the ordinal of each distinct value of a query (persons, sessions, breakdown values). */
class Ordinals {
  readonly values: string[] = [];
  private readonly ids = new Map<string, number>();
  of(value: string): number {
    let id = this.ids.get(value);
    if (id === undefined) this.ids.set(value, (id = this.values.push(value) - 1));
    return id;
  }
  get size(): number {
    return this.values.length;
  }
}

// ---------------------------------------------------------------------------------------------
// What each series aggregates

/** `hogql`: math_hogql, counted like `count` for the ranking, its values from AggregateCells (hogql-math.ts). */
type Family = 'count' | 'stats' | 'distinct' | 'window' | 'numbers' | 'per_actor' | 'hogql';
/** `group`: the series counts groups of one type (`$group_N`) instead of persons. */
type Operand = 'none' | 'person' | 'session' | 'number' | 'group';

const isPropertyMath = (m: SeriesMath) => (PROPERTY_MATHS as readonly string[]).includes(m);
const isPerActorMath = (m: SeriesMath) => (COUNT_PER_ACTOR_MATHS as readonly string[]).includes(m);

function familyOf(entity: SeriesModel, interval: Interval): Family {
  const m = entity.math;
  if (m === 'total') return 'count';
  if (m === 'hogql') return 'hogql';
  if (m === 'sum' || m === 'avg' || m === 'min' || m === 'max') return 'stats';
  if (isPropertyMath(m)) return 'numbers';
  if (isPerActorMath(m)) return 'per_actor';
  if (windowDays(m, interval) !== null) return 'window';
  if (m === 'dau' || m === 'weekly_active' || m === 'monthly_active' || m === 'unique_session' || m === 'unique_group')
    return 'distinct';
  throw new Error(`unsupported math ${m}`);
}

function operandOf(entity: SeriesModel, family: Family, actorGroup: number | null): Operand {
  if (family === 'count' || family === 'hogql') return 'none';
  if (family === 'stats' || family === 'numbers') return 'number';
  if (entity.math === 'unique_session') return 'session';
  return actorGroup === null ? 'person' : 'group';
}

/** Stats cells: sum, count of numbers, min, max. */
const STAT_FIELDS = 4;

/**
 * One series in one period. count / stats: per group `width` = (B + 1) × fields cells (bucket b, then
 * the whole period), flat. Entries (the other maths): one per matching row, with its group, its slot
 * (0 = the lookback before the period, windows only; 1 = in the period before its first bucket; 2 + b
 * = bucket b), its operand and, for windows, its time.
 */
class Accumulator {
  /** Events of each group in [from, to]: the breakdown ranking (dense per group, or past the budget a hash table). */
  volumes: Float64Array | null;
  volumeTable: CellTable | null;
  /** Groups the dense arrays have room for. */
  capacity = 8;
  /** Dense cells, `width` per group; null once the groups outgrew `denseLimit` (then `sparse`). */
  cells: Float64Array | null;
  sparse: CellTable | null = null;
  readonly width: number;
  readonly fields: number;
  /** Entries' groups, only with a breakdown (every entry is group 0 without). */
  groups = new Int32Array(0);
  slots = new Int32Array(0);
  values = new Float64Array(0);
  times = new Float64Array(0);
  entries = 0;
  /** Entries: a direct-mapped memory of each ordinal's last cell, to drop repeats (fixed size, whatever the number of persons). */
  readonly recentOrdinal = new Int32Array(RECENT_SIZE).fill(-1);
  readonly recentCell = new Float64Array(RECENT_SIZE);
  constructor(
    readonly family: Family,
    readonly period: Period,
    private readonly denseLimit: number,
    readonly grouped: boolean,
  ) {
    this.fields = family === 'stats' ? STAT_FIELDS : 1;
    this.width = family === 'count' || family === 'stats' ? (period.buckets.length + 1) * this.fields : 0;
    this.volumes = this.capacity <= denseLimit ? new Float64Array(this.capacity) : null;
    this.volumeTable = this.volumes ? null : new CellTable(1);
    const dense = this.width > 0 && 8 * this.width <= denseLimit;
    this.cells = dense ? emptyCells(8 * this.width, this.fields) : null;
    this.sparse = this.width > 0 && !dense ? new CellTable(this.fields) : null;
  }
  /** Room for groups 0 .. count - 1 (grown by doubling, before a batch's loop); past the dense limit, cells go to a hash table. */
  fitGroups(count: number): void {
    if (count <= this.capacity) return;
    let size = this.capacity;
    while (size < count) size *= 2;
    this.capacity = size;
    if (this.volumes && size <= this.denseLimit) {
      const volumes = new Float64Array(size);
      volumes.set(this.volumes);
      this.volumes = volumes;
    } else if (this.volumes) {
      const table = new CellTable(1);
      this.volumes.forEach((v, g) => {
        if (v) table.cells[table.offset(g)] = v;
      });
      this.volumes = null;
      this.volumeTable = table;
    }
    if (!this.cells) return;
    if (size * this.width <= this.denseLimit) {
      const cells = emptyCells(size * this.width, this.fields);
      cells.set(this.cells);
      this.cells = cells;
      return;
    }
    // Many breakdown values × many buckets: only the (group, slot) cells that occur are kept.
    const table = new CellTable(this.fields);
    const slots = this.width / this.fields;
    for (let c = 0; c < this.cells.length / this.fields; c += 1) {
      const at = c * this.fields;
      if (this.cells[at + (this.fields === 1 ? 0 : 1)] === 0) continue;
      const into = table.offset(Math.floor(c / slots) * slots + (c % slots));
      for (let f = 0; f < this.fields; f += 1) table.cells[into + f] = this.cells[at + f]!;
    }
    this.cells = null;
    this.sparse = table;
  }
  /** Each group's volume, dense (for ranking, one accumulator at a time). */
  volumesOf(groups: number): Float64Array {
    if (this.volumes) return this.volumes;
    const volumes = new Float64Array(groups);
    const table = this.volumeTable!;
    table.forEach((g, at) => {
      volumes[g] = table.cells[at]!;
    });
    return volumes;
  }
  /** Room for `more` entries. */
  fitEntries(more: number): void {
    const need = this.entries + more;
    if (need <= this.slots.length) return;
    const size = Math.max(need, this.slots.length * 2, 1024);
    const grow = <T extends Int32Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const next = make(size);
      next.set(old.subarray(0, this.entries) as never);
      return next;
    };
    if (this.grouped) this.groups = grow(this.groups, (n) => new Int32Array(n));
    this.slots = grow(this.slots, (n) => new Int32Array(n));
    this.values = grow(this.values, (n) => new Float64Array(n));
    if (this.family === 'window') this.times = grow(this.times, (n) => new Float64Array(n));
  }
}

const RECENT_SIZE = 4096;

/** Cells of count (1 field) or stats (sum, count, min, max); min/max start at ±Infinity. */
function emptyCells(length: number, fields: number): Float64Array {
  const cells = new Float64Array(length);
  if (fields === STAT_FIELDS) {
    for (let i = 0; i < cells.length; i += STAT_FIELDS) {
      cells[i + 2] = Infinity;
      cells[i + 3] = -Infinity;
    }
  }
  return cells;
}

/** Open addressing from a cell key (group × slots + slot, exact in a double) to its fields. */
class CellTable {
  keys = new Float64Array(64).fill(-1);
  at = new Int32Array(64);
  cells: Float64Array;
  size = 0;
  constructor(readonly fields: number) {
    this.cells = emptyCells(16 * fields, fields);
  }
  private slotOf(key: number, keys: Float64Array): number {
    const mask = keys.length - 1;
    let h = (Math.imul(key >>> 0, 0x9e3779b1) ^ Math.imul((key / 4294967296) >>> 0, 0x85ebca6b)) & mask;
    while (keys[h] !== -1 && keys[h] !== key) h = (h + 1) & mask;
    return h;
  }
  /** Where the key's fields start, inserted empty if new. */
  offset(key: number): number {
    let h = this.slotOf(key, this.keys);
    if (this.keys[h] === key) return this.at[h]!;
    if ((this.size + 1) * 2 > this.keys.length) {
      this.grow();
      h = this.slotOf(key, this.keys);
    }
    if ((this.size + 1) * this.fields > this.cells.length) {
      const cells = emptyCells(this.cells.length * 2, this.fields);
      cells.set(this.cells);
      this.cells = cells;
    }
    this.keys[h] = key;
    this.at[h] = this.size * this.fields;
    this.size += 1;
    return this.at[h]!;
  }
  private grow(): void {
    const keys = new Float64Array(this.keys.length * 2).fill(-1);
    const at = new Int32Array(keys.length);
    for (let i = 0; i < this.keys.length; i += 1) {
      const key = this.keys[i]!;
      if (key === -1) continue;
      const h = this.slotOf(key, keys);
      keys[h] = key;
      at[h] = this.at[i]!;
    }
    this.keys = keys;
    this.at = at;
  }
  forEach(visit: (key: number, offset: number) => void): void {
    for (let i = 0; i < this.keys.length; i += 1) if (this.keys[i] !== -1) visit(this.keys[i]!, this.at[i]!);
  }
}

// ---------------------------------------------------------------------------------------------
// Per-batch lookups, each computed once per dictionary entry or actor

/** A value per row without a per-row array: row i has `table[indexes[i]]` (a dictionary entry's, or an actor's). */
interface RowLookup<T extends Int32Array | Float64Array> {
  table: T;
  indexes: Uint32Array;
}

export class BatchLookups {
  private readonly cache = new Map<string, RowLookup<Int32Array> | RowLookup<Float64Array>>();
  private zeros: Uint32Array | null = null;
  constructor(
    readonly batch: ColumnBatch,
    private readonly state: QueryState,
  ) {}

  private memo<T extends RowLookup<Int32Array> | RowLookup<Float64Array>>(key: string, build: () => T): T {
    let found = this.cache.get(key) as T | undefined;
    if (!found) this.cache.set(key, (found = build()));
    return found;
  }

  /** Indexes of a column (or actor) that every row shares when the batch has no such column. */
  private shared(): Uint32Array {
    return (this.zeros ??= new Uint32Array(this.batch.n));
  }

  private byActor<T extends Int32Array | Float64Array>(table: T): RowLookup<T> {
    return { table, indexes: this.batch.actorIndexes ?? this.shared() };
  }

  /** Through a property column's dictionary: entry 0 = the row lacks the key. */
  private byColumn<T extends Int32Array | Float64Array>(
    key: string,
    make: (size: number) => T,
    entry: (value: unknown) => number,
  ): RowLookup<T> {
    const column = this.batch.columns.get(key);
    const table = make((column?.dictionary.length ?? 0) + 1);
    table[0] = entry(undefined);
    if (column) for (let v = 0; v < column.dictionary.length; v += 1) table[v + 1] = entry(column.dictionary[v]);
    return { table, indexes: column?.indexes ?? this.shared() };
  }

  /** Person ordinal per row (the person of each distinct id, joined once per distinct id of the batch). */
  persons(): RowLookup<Int32Array> {
    return this.memo('person', () =>
      this.byActor(Int32Array.from(this.batch.actors, (a) => this.state.persons.of(a.person))),
    );
  }

  /**
   * Group ordinal per row for a series counting groups of type `index` (-1: no group; such rows are
   * masked out before). Groups share the persons' ordinals, under keys no person id can have.
   */
  groupActors(index: number): RowLookup<Int32Array> {
    return this.memo(`g:${index}`, () =>
      this.byColumn(
        groupColumn(index),
        (n) => new Int32Array(n),
        (v) => {
          const key = groupKeyText(v);
          return key === null ? -1 : this.state.persons.of(`\u0000${index}\u0000${key}`);
        },
      ),
    );
  }

  /** Session ordinal per row (-1: no session), for unique_session. */
  sessions(): RowLookup<Int32Array> {
    return this.memo('session', () =>
      this.byColumn(
        '$session_id',
        (n) => new Int32Array(n),
        (id) => {
          if (id === undefined || id === null || id === '') return -1;
          return this.state.sessions.of(typeof id === 'string' ? id : JSON.stringify(id));
        },
      ),
    );
  }

  /** A property math's number per row (NaN: not a number). */
  numbers(entity: SeriesModel): RowLookup<Float64Array> {
    const key = entity.math_property!;
    if (entity.math_property_type === 'person_properties') {
      return this.memo(`p:${key}`, () =>
        this.byActor(Float64Array.from(this.batch.actors, (a) => toNumber(propertyOf(a.properties, key)) ?? NaN)),
      );
    }
    return this.memo(`e:${key}`, () =>
      this.byColumn(
        key,
        (n) => new Float64Array(n),
        (v) => toNumber(v) ?? NaN,
      ),
    );
  }

  /** Breakdown group ordinal per row, materialised once per distinct value. */
  groups(spec: BreakdownModel): RowLookup<Int32Array> {
    return this.memo('groups', () => {
      const { batch, state } = this;
      if (state.breakdownExpr !== null) {
        const { table, indexes } = valuesOf(state.breakdownExpr, batch);
        return {
          table: Int32Array.from(table, (v) => state.groups.of(breakdownOf(v))),
          indexes: indexes ?? this.shared(),
        };
      }
      if (spec.source === 'person')
        return this.byActor(
          Int32Array.from(batch.actors, (a) => state.groups.of(breakdownText(propertyOf(a.properties, spec.property)))),
        );
      if (spec.source === 'group') {
        const index = spec.group_type_index!;
        // Every batch's dictionary names the same few hundred groups again: each group's value is looked up once per query.
        const seen = (state.groupBreakdowns ??= new Map());
        return this.byColumn(
          groupColumn(index),
          (n) => new Int32Array(n),
          (v) => {
            const known = seen.get(v);
            if (known !== undefined) return known;
            const key = groupKeyText(v);
            const properties = key === null ? undefined : state.groupProperties(index, key);
            const ordinal = state.groups.of(breakdownText(propertyOf(properties, spec.property)));
            seen.set(v, ordinal);
            return ordinal;
          },
        );
      }
      if (spec.source === 'event')
        return this.byColumn(
          spec.property,
          (n) => new Int32Array(n),
          (v) => state.groups.of(breakdownText(v)),
        );
      return this.byColumn(
        '$session_id',
        (n) => new Int32Array(n),
        (id) => {
          const key = sessionKey(id);
          const duration = key === null ? undefined : state.durations?.get(key);
          return state.groups.of(breakdownText(duration));
        },
      );
    });
  }
}

/** The session a `$session_duration` breakdown groups by (breakdown.ts sessionKey). */
const sessionKey = (id: unknown): string | null => (id === undefined || id === null || id === '' ? null : textOf(id));

// ---------------------------------------------------------------------------------------------
// The query

export class QueryState {
  readonly persons = new Ordinals();
  readonly sessions = new Ordinals();
  readonly groups = new Ordinals();
  durations: Map<string, number> | null = null;
  constructor(readonly groupProperties: GroupLookup = NO_GROUPS) {}
  /** A hogql breakdown's expression, compiled once per query (its memo spans batches). */
  breakdownExpr: ColumnExpr | null = null;
  /** A group breakdown's ordinal per `$group_N` value, filled as batches name groups (one breakdown per query). */
  groupBreakdowns: Map<unknown, number> | null = null;
}

interface SeriesPlan {
  entity: SeriesModel;
  match: MaskNode;
  family: Family;
  operand: Operand;
  /** The group type the series counts instead of persons (operand `group`), else null. */
  actorGroup: number | null;
  /** Per period. */
  accumulators: Accumulator[];
  /** math_hogql: per period, the ranking its rows follow (null: no rows) and the rows' accumulators. */
  hogql: { make: () => Aggregate; expr: ColumnExpr; rows: HogQLRows[] } | null;
}

/** The rows an action matches: any of its steps (the step's event, if it names one, and its filters). */
export function actionNode(action: ActionDefinition, ctx: DateContext, attr: string): MaskNode {
  const steps = action.steps.map((step, i) => {
    const filters = groupNode(
      { type: 'AND', values: parseStoredFilters(step.properties, `${attr}__steps__${i}__properties`) },
      ctx,
    );
    return step.event === null || step.event === undefined
      ? filters
      : andNode({ kind: 'name', name: step.event }, filters);
  });
  return { kind: 'or', parts: steps };
}

/** Each series' rows: its event/action and filters, the global filters and the applied test-account filters. */
export function seriesNodes(
  query: TrendsModel,
  project: ProjectSettings,
  actions: ReadonlyMap<number, ActionDefinition>,
  ctx: DateContext,
  lookups: FilterLookups,
): MaskNode[] {
  const global = groupNode(query.properties, ctx, lookups);
  const testAccounts = query.filterTestAccounts
    ? groupNode({ type: 'AND', values: testAccountFilters(query, project) }, ctx, lookups)
    : null;
  return query.series.map((entity) => {
    const required = requiredGroupOf(entity, query);
    const own = andNode(groupNode(entity.properties, ctx, lookups), required === null ? ALL : hasGroupNode(required));
    let matches: MaskNode;
    if (entity.kind === 'EventsNode') {
      matches = entity.event === null ? own : andNode({ kind: 'name', name: entity.event }, own);
    } else {
      matches = andNode(actionNode(actionOf(actions, entity.id), ctx, entity.attr), own);
    }
    return testAccounts ? andNode(matches, global, testAccounts) : andNode(matches, global);
  });
}

/** `$session_duration`: whole seconds between the first and last event of each `$session_id` among all the events. */
function sessionDurations(source: ColumnSource): Map<string, number> {
  const keys = new Ordinals();
  const first = new FloatList();
  const last = new FloatList();
  source.forEachBatch((batch) => {
    const column = batch.columns.get('$session_id');
    if (!column) return;
    const table = Int32Array.from({ length: column.dictionary.length + 1 }, (_, v) => {
      const key = v === 0 ? null : sessionKey(column.dictionary[v - 1]);
      return key === null ? -1 : keys.of(key);
    });
    const { time, base } = batch;
    for (let i = 0; i < batch.n; i += 1) {
      const s = table[column.indexes[i]!]!;
      const t = base + time[i]!;
      if (s < 0 || t < source.from || t > source.to) continue;
      if (s >= first.length) {
        while (first.length <= s) {
          first.push(Infinity);
          last.push(-Infinity);
        }
      }
      if (t < first.data[s]!) first.data[s] = t;
      if (t > last.data[s]!) last.data[s] = t;
    }
  });
  const out = new Map<string, number>();
  keys.values.forEach((key, s) => {
    out.set(key, Math.floor(last.data[s]! / 1000) - Math.floor(first.data[s]! / 1000));
  });
  return out;
}

export function computeTrendFromColumns(query: TrendsModel, input: ColumnarInput): TrendResponse {
  const ctx = projectContext(query, input.project, input.now);
  const periods = periodsFor(query, resolveDateRange(query, input.project, input.now, input.firstEventAt));
  const actions = indexActions(query, input.actions);
  const nodes = seriesNodes(query, input.project, actions, ctx, { groups: input.groups, cohorts: input.cohorts });
  const state = new QueryState(input.groups);
  const breakdown = query.breakdownFilter;
  const evalCtx = evalContextOf(ctx);
  if (breakdown?.expr) state.breakdownExpr = compileColumnExpr(breakdown.expr, evalCtx, breakdown.attr ?? 'breakdown');
  if (breakdown?.source === 'session') state.durations = sessionDurations(input.source);
  const { display } = query.trendsFilter;
  const aggregate = AGGREGATED_DISPLAYS.has(display);
  // Dense (group × bucket) cells share a budget; past it an accumulator keeps only the cells that occur.
  const denseLimit = Math.floor((input.denseCells ?? DENSE_CELLS) / Math.max(1, query.series.length * periods.length));
  const plans: SeriesPlan[] = query.series.map((entity, i) => {
    const family = familyOf(entity, query.interval);
    const actorGroup = actorGroupOf(entity, query);
    return {
      entity,
      match: nodes[i]!,
      family,
      operand: operandOf(entity, family, actorGroup),
      actorGroup,
      accumulators: periods.map((p) => new Accumulator(family, p, denseLimit, breakdown !== null)),
      hogql: family === 'hogql' ? hogqlPlan(entity, evalCtx) : null,
    };
  });
  // Rows outside the source's window are not the query's events (storage may hand over whole days).
  const windows = periods.map((period) => ({
    period,
    lo: Math.max(readFrom(query, period, ctx.tz), input.source.from),
  }));
  const last = input.source.to;
  // Without a breakdown math_hogql has one row, known before any event: its cells fold in the one pass.
  const hogqlPlans = plans.filter((plan) => plan.hogql !== null);
  if (!breakdown)
    for (const plan of hogqlPlans)
      plan.hogql!.rows = periods.map((period) => hogqlRows(plan, period, 'one', aggregate));

  input.source.forEachBatch((batch) => {
    const lookups = new BatchLookups(batch, state);
    for (const plan of plans) {
      const mask = evaluate(plan.match, batch);
      if (mask === false) continue;
      // Looked up (and the batch's columns decoded) only for a batch some series matches.
      const groups = breakdown ? lookups.groups(breakdown) : null;
      const operand =
        plan.operand === 'person'
          ? lookups.persons()
          : plan.operand === 'group'
            ? lookups.groupActors(plan.actorGroup!)
            : plan.operand === 'session'
              ? lookups.sessions()
              : plan.operand === 'number'
                ? lookups.numbers(plan.entity)
                : null;
      windows.forEach(({ period, lo }, p) => {
        fold(plan.accumulators[p]!, batch, mask, groups, Math.max(state.groups.size, 1), operand, lo, last, period);
        if (!breakdown && plan.hogql) plan.hogql.rows[p]!.cells.fold(batch, mask, null, lo, last);
      });
    }
  });

  // With a breakdown, math_hogql's rows are the ranked values (known once every batch is seen): a
  // second pass folds each row's events into its cells, so Other is one accumulator over its events.
  if (breakdown && hogqlPlans.length) {
    for (const plan of hogqlPlans)
      plan.hogql!.rows = periods.map((period, p) => {
        const ranking = rankGroups(plan.accumulators[p]!.volumesOf(state.groups.size), state.groups.values, breakdown);
        return hogqlRows(plan, period, ranking, aggregate);
      });
    input.source.forEachBatch((batch) => {
      const lookups = new BatchLookups(batch, state);
      for (const plan of hogqlPlans) {
        const mask = evaluate(plan.match, batch);
        if (mask === false) continue;
        const groups = lookups.groups(breakdown);
        windows.forEach(({ lo }, p) => {
          plan.hogql!.rows[p]!.cells.fold(batch, mask, groups, lo, last);
        });
      }
    });
  }

  const cumulative = display === 'ActionsLineGraphCumulative';
  const results: PeriodResult[] = periods.map((period, p) => ({
    period,
    series: plans.map((plan) => ({
      entity: plan.entity,
      rows: plan.hogql
        ? hogqlResult(plan.hogql.rows[p]!)
        : rowsOf(plan, plan.accumulators[p]!, breakdown, state, {
            cumulative,
            aggregate,
            interval: query.interval,
            tz: ctx.tz,
            personCount: state.persons.size,
          }),
    })),
  }));
  return buildResponse({ query, timezone: ctx.tz, actions }, results);
}

/** math_hogql compiled once per query: the aggregate's accumulator factory, and the fields it reads. */
function hogqlPlan(entity: SeriesModel, ctx: EvalContext): NonNullable<SeriesPlan['hogql']> {
  const attr = `${entity.attr}__math_hogql`;
  const expr = entity.math_hogql!;
  return {
    make: compileAggregate(expr, ctx, attr),
    expr: columnExpr(() => null, fieldsOf(expr), ctx.timezone),
    rows: [],
  };
}

interface HogQLRows {
  /** 'one': no breakdown, one row; null: a breakdown without events in the period, no rows. */
  ranking: Ranking | null | 'one';
  cells: AggregateCells;
}

/** The cells of math_hogql's rows in one period: one row without a breakdown, else one per ranked value. */
function hogqlRows(plan: SeriesPlan, period: Period, ranking: HogQLRows['ranking'], aggregate: boolean): HogQLRows {
  const { make, expr } = plan.hogql!;
  const [rowOfGroup, rowCount] =
    ranking === 'one'
      ? [Int32Array.of(0), 1]
      : ranking
        ? [ranking.rowOfGroup, ranking.values.length]
        : [new Int32Array(0), 0];
  return { ranking, cells: new AggregateCells(make, expr, period, rowOfGroup, rowCount, aggregate) };
}

function hogqlResult({ ranking, cells }: HogQLRows): RowValues[] {
  const rows = cells.rows();
  return ranking === 'one' || ranking === null
    ? rows
    : ranking.values.map((value, r) => ({ breakdown_value: value, ...rows[r]! }));
}

/** Folds one batch's matching rows of [lo, period.to] (and up to `last`) into a series' accumulator for one period. */
function fold(
  acc: Accumulator,
  batch: ColumnBatch,
  mask: Mask,
  groups: RowLookup<Int32Array> | null,
  groupCount: number,
  operand: RowLookup<Int32Array> | RowLookup<Float64Array> | null,
  lo: number,
  last: number,
  period: Period,
): void {
  const { time, base, n } = batch;
  const groupTable = groups?.table ?? null;
  const groupIndexes = groups?.indexes ?? null;
  const operandTable = operand?.table ?? null;
  const operandIndexes = operand?.indexes ?? null;
  const { from, to } = period;
  const end = to + 1;
  const starts = period.buckets;
  const B = starts.length;
  const rowMask = typeof mask === 'boolean' ? null : mask;
  const family = acc.family;
  acc.fitGroups(groupCount);
  if (family !== 'count' && family !== 'stats' && family !== 'hogql') acc.fitEntries(n);
  const dedup = family === 'distinct' || family === 'window';
  const { recentOrdinal, recentCell, volumes, volumeTable, cells, sparse, width } = acc;
  const slotsPerGroup = B + 1;
  // The bucket of the previous row: rows come in time order within a batch, so most rows stay in it
  // or move to the next; anything else is a binary search over the bucket starts.
  let bucket = -1;
  let bucketStart = Infinity;
  let bucketEnd = -Infinity;
  for (let i = 0; i < n; i += 1) {
    if (rowMask !== null && rowMask[i] === 0) continue;
    const t = base + time[i]!;
    if (t < lo || !(t < end) || t > last) continue;
    const g = groupTable === null ? 0 : groupTable[groupIndexes![i]!]!;
    if (t < from) {
      // Before the period: only the trailing active-user windows look back.
      if (family === 'window') {
        const k = acc.entries++;
        if (groupTable !== null) acc.groups[k] = g;
        acc.slots[k] = 0;
        acc.values[k] = operandTable![operandIndexes![i]!]!;
        acc.times[k] = t;
      }
      continue;
    }
    if (t <= to) {
      if (volumes !== null) volumes[g]! += 1;
      else {
        const at = volumeTable!.offset(g);
        volumeTable!.cells[at]! += 1;
      }
    }
    // math_hogql: only the volumes here (for the ranking); its accumulators are AggregateCells.
    if (family === 'hogql') continue;
    if (!(t >= bucketStart && t < bucketEnd)) {
      bucket = t > to || !B || t < starts[0]! ? -1 : bucketOf(starts, t);
      bucketStart = bucket < 0 ? Infinity : starts[bucket]!;
      bucketEnd = bucket < 0 ? -Infinity : bucket + 1 < B ? starts[bucket + 1]! : to + 1;
    }
    const b = t > to ? -1 : bucket;
    if (family === 'count') {
      if (cells !== null) {
        const at = g * width;
        if (b >= 0) cells[at + b]! += 1;
        cells[at + B]! += 1;
      } else {
        // offset() may grow the table's cells: take the offset before reading `cells`.
        const table = sparse!;
        if (b >= 0) {
          const at = table.offset(g * slotsPerGroup + b);
          table.cells[at]! += 1;
        }
        const whole = table.offset(g * slotsPerGroup + B);
        table.cells[whole]! += 1;
      }
    } else if (family === 'stats') {
      const v = operandTable![operandIndexes![i]!]!;
      if (Number.isNaN(v)) continue;
      if (cells !== null) {
        const at = g * width;
        if (b >= 0) addStat(cells, at + b * STAT_FIELDS, v);
        addStat(cells, at + B * STAT_FIELDS, v);
      } else {
        const table = sparse!;
        if (b >= 0) {
          const at = table.offset(g * slotsPerGroup + b);
          addStat(table.cells, at, v);
        }
        const whole = table.offset(g * slotsPerGroup + B);
        addStat(table.cells, whole, v);
      }
    } else {
      const v = operandTable === null ? 0 : operandTable[operandIndexes![i]!]!;
      if (dedup) {
        // Distinct persons or sessions: one entry per (ordinal, group, slot) is enough, and rows of
        // a batch come in time order, so a repeat of the ordinal's last cell is dropped here. (A
        // person's events in one bucket are in the same trailing windows: the windows' edges are
        // bucket edges.) No session: counts for nothing.
        if (v < 0) continue;
        const cell = g * (B + 2) + b + 2;
        const h = v & (RECENT_SIZE - 1);
        if (recentOrdinal[h] === v && recentCell[h] === cell) continue;
        recentOrdinal[h] = v;
        recentCell[h] = cell;
      }
      // Percentiles: a value that is not a number counts for nothing.
      if (Number.isNaN(v)) continue;
      const k = acc.entries++;
      if (groupTable !== null) acc.groups[k] = g;
      acc.slots[k] = b + 2;
      acc.values[k] = v;
      if (family === 'window') acc.times[k] = t;
    }
  }
}

function addStat(cells: Float64Array, at: number, v: number): void {
  cells[at]! += v;
  cells[at + 1]! += 1;
  if (v < cells[at + 2]!) cells[at + 2] = v;
  if (v > cells[at + 3]!) cells[at + 3] = v;
}

// ---------------------------------------------------------------------------------------------
// From accumulators to rows

interface FinishContext {
  cumulative: boolean;
  /**
   * Whether rows need their whole-period value: only aggregated displays show it (output.ts). Entry
   * maths skip it otherwise (NaN), which spares a second pass over every entry (a quantile of all of them).
   */
  aggregate: boolean;
  personCount: number;
  interval: Interval;
  tz: string;
}

/**
 * The rows of one series in one period: without a breakdown one row (group 0); with one, the period's
 * values ranked by volume (rank.ts), then each row computed from the cells or entries of its groups.
 */
function rowsOf(
  plan: SeriesPlan,
  acc: Accumulator,
  breakdown: BreakdownModel | null,
  state: QueryState,
  ctx: FinishContext,
): RowValues[] {
  const groupCount = Math.max(state.groups.size, 1);
  const math = plan.entity.math;
  if (!breakdown) {
    const rowOfGroup = new Int32Array(groupCount);
    return [computeRows(math, acc, { rowOfGroup, rowCount: 1 }, ctx)[0]!];
  }
  const ranked = rankGroups(acc.volumesOf(state.groups.size), state.groups.values, breakdown);
  if (!ranked) return [];
  const rows = computeRows(math, acc, { rowOfGroup: ranked.rowOfGroup, rowCount: ranked.values.length }, ctx);
  return ranked.values.map((value, r) => ({ breakdown_value: value, ...rows[r]! }));
}

type Row = Omit<RowValues, 'breakdown_value'>;

/** The row each group's events count in (-1: in none), and how many rows there are. */
interface RowMap {
  rowOfGroup: Int32Array;
  rowCount: number;
}

function computeRows(math: SeriesMath, acc: Accumulator, rowMap: RowMap, ctx: FinishContext): Row[] {
  const B = acc.period.buckets.length;
  const { rowOfGroup, rowCount } = rowMap;
  if (acc.family === 'count' || acc.family === 'stats') {
    const fields = acc.family === 'stats' ? STAT_FIELDS : 1;
    const merged = Array.from({ length: rowCount }, () => {
      const cells = new Float64Array((B + 1) * fields);
      if (fields === STAT_FIELDS) {
        for (let i = 0; i < cells.length; i += STAT_FIELDS) {
          cells[i + 2] = Infinity;
          cells[i + 3] = -Infinity;
        }
      }
      return cells;
    });
    const merge = (into: Float64Array, at: number, cells: Float64Array, from: number, count: number) => {
      if (fields === 1) for (let i = 0; i < count; i += 1) into[at + i]! += cells[from + i]!;
      else
        for (let i = 0; i < count; i += STAT_FIELDS) {
          into[at + i]! += cells[from + i]!;
          into[at + i + 1]! += cells[from + i + 1]!;
          if (cells[from + i + 2]! < into[at + i + 2]!) into[at + i + 2] = cells[from + i + 2]!;
          if (cells[from + i + 3]! > into[at + i + 3]!) into[at + i + 3] = cells[from + i + 3]!;
        }
    };
    if (acc.cells) {
      const groupCount = Math.min(rowOfGroup.length, acc.capacity);
      for (let g = 0; g < groupCount; g += 1) {
        const r = rowOfGroup[g]!;
        if (r >= 0) merge(merged[r]!, 0, acc.cells, g * acc.width, acc.width);
      }
    } else {
      const table = acc.sparse!;
      table.forEach((key, offset) => {
        const g = Math.floor(key / (B + 1));
        const r = g < rowOfGroup.length ? rowOfGroup[g]! : -1;
        if (r >= 0) merge(merged[r]!, (key - g * (B + 1)) * fields, table.cells, offset, fields);
      });
    }
    return merged.map((cells) => {
      const value = (slot: number) => (fields === 1 ? cells[slot]! : statOf(math, cells, slot * STAT_FIELDS));
      return { values: Array.from({ length: B }, (_, b) => value(b)), aggregated: value(B) };
    });
  }
  return entryRows(math, acc, rowMap, ctx);
}

function statOf(math: SeriesMath, cells: Float64Array, at: number): number {
  const count = cells[at + 1]!;
  if (count === 0) return 0;
  if (math === 'sum') return cells[at]!;
  if (math === 'avg') return cells[at]! / count;
  return math === 'min' ? cells[at + 2]! : cells[at + 3]!;
}

const QUANTILES: Record<string, number> = { median: 0.5, p75: 0.75, p90: 0.9, p95: 0.95, p99: 0.99 };

/** One statistic over numbers (math.ts statistic); an empty set gives 0. */
function statistic(kind: string, numbers: Float64Array): number {
  const n = numbers.length;
  if (!n) return 0;
  switch (kind) {
    case 'sum':
    case 'avg': {
      let sum = 0;
      for (let i = 0; i < n; i += 1) sum += numbers[i]!;
      return kind === 'sum' ? sum : sum / n;
    }
    case 'min': {
      let min = numbers[0]!;
      for (let i = 1; i < n; i += 1) if (numbers[i]! < min) min = numbers[i]!;
      return min;
    }
    case 'max': {
      let max = numbers[0]!;
      for (let i = 1; i < n; i += 1) if (numbers[i]! > max) max = numbers[i]!;
      return max;
    }
    default:
      return quantileOf(numbers, QUANTILES[kind]!);
  }
}

/**
 * A quantile with linear interpolation between closest ranks (numpy's default) by selection, not a sort: the
 * rank-h element by quickselect, then the smallest element above it (ClickHouse's quantileExact does
 * the same with nth_element). Reorders `numbers`.
 */
function quantileOf(numbers: Float64Array, p: number): number {
  const n = numbers.length;
  const h = (n - 1) * p;
  const lo = Math.floor(h);
  const below = select(numbers, lo);
  if (lo + 1 >= n || h === lo) return below;
  let above = Infinity;
  for (let i = lo + 1; i < n; i += 1) if (numbers[i]! < above) above = numbers[i]!;
  return below + (h - lo) * (above - below);
}

/** Moves the k-th smallest element to index k, smaller ones before it, larger or equal after (Hoare's selection, middle pivot). */
function select(a: Float64Array, k: number): number {
  let left = 0;
  let right = a.length - 1;
  while (right > left) {
    const pivot = a[(left + right) >> 1]!;
    let i = left;
    let j = right;
    while (i <= j) {
      while (a[i]! < pivot) i += 1;
      while (a[j]! > pivot) j -= 1;
      if (i <= j) {
        const tmp = a[i]!;
        a[i] = a[j]!;
        a[j] = tmp;
        i += 1;
        j -= 1;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else break;
  }
  return a[k]!;
}

/**
 * Rows of the maths computed from per-row entries: entries are ordered by (row, slot) with a counting
 * sort, then each slot (and each row's whole period) is reduced over typed arrays; distinct counts use
 * a stamp per ordinal instead of a Set. Property maths sort the numbers themselves, so each bucket's
 * numbers are one contiguous run, reduced where they lie.
 */
function entryRows(math: SeriesMath, acc: Accumulator, rowMap: RowMap, ctx: FinishContext): Row[] {
  const slotsPerRow = acc.period.buckets.length + 2;
  if (acc.family === 'numbers') return numberRows(math, acc, rowMap, slotsPerRow, ctx);
  const cells = new EntryCells(acc, rowMap.rowOfGroup, slotsPerRow, false);
  const starts = cells.starts(rowMap.rowCount);
  const order = new Int32Array(starts[starts.length - 1]!);
  cells.scatter(starts, order, null);
  const rows: Row[] = [];
  const distinct = new DistinctCounter();
  for (let r = 0; r < rowMap.rowCount; r += 1) {
    const base = r * slotsPerRow;
    const range = (fromSlot: number, toSlot: number) =>
      order.subarray(starts[base + fromSlot]!, starts[base + toSlot]!);
    rows.push(entryRow(math, acc, range, ctx, distinct));
  }
  return rows;
}

/** Property maths: the entries' numbers (not NaN) sorted by cell, each bucket's statistic over its run in place. */
function numberRows(
  math: SeriesMath,
  acc: Accumulator,
  { rowOfGroup, rowCount }: RowMap,
  slotsPerRow: number,
  ctx: FinishContext,
): Row[] {
  const cells = new EntryCells(acc, rowOfGroup, slotsPerRow, true);
  const starts = cells.starts(rowCount);
  const numbers = new Float64Array(starts[starts.length - 1]!);
  cells.scatter(starts, numbers, acc.values);
  const run = (from: number, to: number) => numbers.subarray(starts[from]!, starts[to]!);
  const B = slotsPerRow - 2;
  return Array.from({ length: rowCount }, (_, r) => {
    const base = r * slotsPerRow;
    const bucketValues = Array.from({ length: B }, (_, b) => statistic(math, run(base + b + 2, base + b + 3)));
    // After the buckets: their statistics may reorder numbers only within each bucket's run.
    const aggregated = ctx.aggregate ? statistic(math, run(base + 1, base + slotsPerRow)) : Number.NaN;
    return { values: bucketValues, aggregated };
  });
}

/** A counting sort of an accumulator's entries by cell (row, slot); entries of dropped groups (and NaN numbers, if asked) have none. */
class EntryCells {
  constructor(
    private readonly acc: Accumulator,
    private readonly rowOfGroup: Int32Array,
    private readonly slotsPerRow: number,
    private readonly skipNaN: boolean,
  ) {}
  private cellOf(k: number): number {
    const { acc } = this;
    if (this.skipNaN && Number.isNaN(acc.values[k]!)) return -1;
    const r = this.rowOfGroup[acc.grouped ? acc.groups[k]! : 0] ?? -1;
    return r < 0 ? -1 : r * this.slotsPerRow + acc.slots[k]!;
  }
  /** Where each cell's entries start: cell c's are at starts[c]..starts[c + 1]. */
  starts(rowCount: number): Int32Array {
    const cellCount = rowCount * this.slotsPerRow;
    const starts = new Int32Array(cellCount + 1);
    for (let k = 0; k < this.acc.entries; k += 1) {
      const cell = this.cellOf(k);
      if (cell >= 0) starts[cell + 1]! += 1;
    }
    for (let c = 0; c < cellCount; c += 1) starts[c + 1]! += starts[c]!;
    return starts;
  }
  /** Writes every kept entry in cell order into `into`: its value from `source`, or its index without one. */
  scatter(starts: Int32Array, into: Int32Array | Float64Array, source: Float64Array | null): void {
    const fill = starts.slice(0, starts.length - 1);
    for (let k = 0; k < this.acc.entries; k += 1) {
      const cell = this.cellOf(k);
      if (cell >= 0) into[fill[cell]!++] = source ? source[k]! : k;
    }
  }
}

/** One row's buckets and whole period from its entries; `range(a, b)` is the row's entries of slots a..b-1. */
function entryRow(
  math: SeriesPlan['entity']['math'],
  acc: Accumulator,
  range: (fromSlot: number, toSlot: number) => Int32Array,
  ctx: FinishContext,
  distinct: DistinctCounter,
): Row {
  const { period, family, values } = acc;
  const B = period.buckets.length;
  const slotsPerRow = B + 2;
  const bucket = (b: number) => range(b + 2, b + 3);
  const inPeriod = range(1, slotsPerRow);
  if (family === 'window') {
    const windowed = range(0, slotsPerRow);
    const bucketValues = activePersons(windowed, acc, period, windowDays(math, ctx.interval)!, ctx.tz, ctx.personCount);
    return { values: bucketValues, aggregated: bucketValues.at(-1) ?? 0 };
  }
  if (family === 'distinct') {
    const bucketValues =
      ctx.cumulative && (math === 'dau' || math === 'unique_group')
        ? firstAppearances(range(2, slotsPerRow), acc.slots, values, B, distinct)
        : Array.from({ length: B }, (_, b) => distinct.count(bucket(b), values));
    const aggregated =
      ACTIVE_WINDOW_DAYS[math] !== undefined
        ? (bucketValues.at(-1) ?? 0)
        : ctx.aggregate
          ? distinct.count(inPeriod, values)
          : Number.NaN;
    return { values: bucketValues, aggregated };
  }
  // Per-actor counts.
  const kind = math.replace('_count_per_actor', '');
  return {
    values: Array.from({ length: B }, (_, b) => statistic(kind, distinct.perOrdinal(bucket(b), values))),
    aggregated: ctx.aggregate ? statistic(kind, distinct.perOrdinal(inPeriod, values)) : Number.NaN,
  };
}

/** Distinct ordinals (persons, sessions) of a set of entries, with a stamp per ordinal instead of a Set. */
class DistinctCounter {
  private stamps = new Int32Array(1024);
  private counts = new Int32Array(1024);
  private epoch = 0;
  private fit(max: number): void {
    if (max < this.stamps.length) return;
    let size = this.stamps.length;
    while (size <= max) size *= 2;
    const stamps = new Int32Array(size);
    stamps.set(this.stamps);
    this.stamps = stamps;
    this.counts = new Int32Array(size);
  }
  /** A fresh set. */
  next(): number {
    return ++this.epoch;
  }
  /** Adds an ordinal to the current set; true when new to it. */
  add(ordinal: number, epoch: number): boolean {
    this.fit(ordinal);
    if (this.stamps[ordinal] === epoch) return false;
    this.stamps[ordinal] = epoch;
    return true;
  }
  count(entries: Int32Array, values: Float64Array): number {
    const epoch = this.next();
    let n = 0;
    for (let i = 0; i < entries.length; i += 1) {
      const v = values[entries[i]!]!;
      if (v >= 0 && this.add(v, epoch)) n += 1;
    }
    return n;
  }
  /** Entries per distinct ordinal, in first-seen order. */
  perOrdinal(entries: Int32Array, values: Float64Array): Float64Array {
    const epoch = this.next();
    const seen: number[] = [];
    for (let i = 0; i < entries.length; i += 1) {
      const v = values[entries[i]!]!;
      if (this.add(v, epoch)) {
        this.counts[v] = 0;
        seen.push(v);
      }
      this.counts[v]! += 1;
    }
    return Float64Array.from(seen, (v) => this.counts[v]!);
  }
}

/** New persons per bucket (cumulative dau): the bucket of each person's first entry, entries in bucket order. */
function firstAppearances(
  entries: Int32Array,
  slots: Int32Array,
  values: Float64Array,
  B: number,
  distinct: DistinctCounter,
): number[] {
  const fresh = new Array<number>(B).fill(0);
  const epoch = distinct.next();
  // Entries are ordered by slot, so the first time a person is seen is their earliest bucket.
  for (let i = 0; i < entries.length; i += 1) {
    const k = entries[i]!;
    if (distinct.add(values[k]!, epoch)) fresh[slots[k]! - 2]! += 1;
  }
  return fresh;
}

/**
 * Persons active from the start of the local day `days - 1` days before each bucket until its end
 * (math.ts activePersonsPerBucket): entries sorted by time, both window edges moving forward, a count
 * per person ordinal.
 */
function activePersons(
  entries: Int32Array,
  acc: Accumulator,
  period: Period,
  days: number,
  tz: string,
  personCount: number,
): number[] {
  const times = acc.times;
  const persons = acc.values;
  const sorted = Int32Array.from(entries).sort((a, b) => times[a]! - times[b]! || a - b);
  const inWindow = new Int32Array(personCount);
  let active = 0;
  let lo = 0;
  let hi = 0;
  return period.buckets.map((start, i) => {
    const from = windowStart(start, days, tz);
    const next = period.buckets[i + 1];
    const end = next === undefined ? period.to : Math.min(next - 1, period.to);
    for (; hi < sorted.length && times[sorted[hi]!]! <= end; hi++)
      if (inWindow[persons[sorted[hi]!]!]!++ === 0) active += 1;
    for (; lo < hi && times[sorted[lo]!]! < from; lo++) if (--inWindow[persons[sorted[lo]!]!]! === 0) active -= 1;
    return active;
  });
}
