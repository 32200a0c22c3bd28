/**
 * Filters over columns: each property filter is answered once per distinct dictionary value of its
 * column (or once per actor for person properties), then spread over the rows as a byte mask by
 * index lookup; AND/OR groups combine masks. The per-value test is the row engine's own
 * (properties.ts valueTest, RE2 regexes included), so both agree by construction. A HogQL filter is
 * evaluated once per dictionary entry of the one column it reads, or per distinct tuple of several
 * (expressions.ts), then spread the same way.
 */
import { isCohortFilter, isMember, NO_COHORTS } from '../cohort-filters.ts';
import type { DateContext } from '../dates.ts';
import { type GroupLookup, groupColumn, groupKeyText, NO_GROUPS } from '../groups.ts';
import { type FilterLookups, isGroup, propertyOf, valueTest } from '../properties.ts';
import { isHogQLFilter, type PropertyFilter, type PropertyGroup } from '../types.ts';
import type { ColumnBatch } from './batch.ts';
import { type ColumnExpr, compileColumnExpr, evalContextOf, passes, valuesOf } from './expressions.ts';

/** Rows of a batch that pass: every row (true), none (false), or row i when mask[i] is 1. */
export type Mask = Uint8Array | boolean;

export type MaskNode =
  | { kind: 'const'; value: boolean }
  | { kind: 'name'; name: string }
  | {
      kind: 'property';
      person: boolean;
      key: string;
      test: (value: unknown) => boolean;
      memo: Map<unknown, boolean>;
      /** A group filter: the property of the row's `$group_N` group, read through the query's GroupLookup. */
      group?: { index: number; lookup: GroupLookup };
    }
  /** A HogQL boolean expression (`{"type": "hogql", "key": ...}`): evaluated per dictionary entry or distinct tuple (expressions.ts). */
  | { kind: 'hogql'; expr: ColumnExpr }
  /** A cohort filter: the cohort's members (person ids, loaded once per query) tested once per actor of a batch. */
  | { kind: 'cohort'; members: ReadonlySet<number>; inside: boolean }
  | { kind: 'and' | 'or'; parts: MaskNode[] };

export const ALL: MaskNode = { kind: 'const', value: true };

/** Primitive values whose answer a filter remembers across batches (each batch's dictionary repeats the last one's). */
const MEMO_LIMIT = 65_536;

/** `lookups`: the query's group properties (group filters) and cohort members (cohort filters). */
export function filterNode(f: PropertyFilter, ctx: DateContext, lookups: FilterLookups = {}): MaskNode {
  if (isCohortFilter(f)) {
    const cohort = (lookups.cohorts ?? NO_COHORTS).get(f.value);
    // The domain loads every cohort a query names before it runs (shared/domain/trend-cohorts.ts).
    if (!cohort) throw new Error(`cohort ${f.value} was not loaded`);
    return { kind: 'cohort', members: cohort.members, inside: f.operator !== 'not_in' };
  }
  const node = { kind: 'property', person: f.type === 'person', key: f.key, test: valueTest(f, ctx), memo: new Map() };
  return f.type === 'group' && f.group_type_index !== undefined
    ? { ...node, kind: 'property', group: { index: f.group_type_index, lookup: lookups.groups ?? NO_GROUPS } }
    : { ...node, kind: 'property' };
}

/** Rows that have a group of type `index` (a non-empty `$group_N`): PostHog counts only those when it aggregates by the group. */
export function hasGroupNode(index: number): MaskNode {
  const present = (v: unknown) => groupKeyText(v) !== null;
  return { kind: 'property', person: false, key: groupColumn(index), test: present, memo: new Map() };
}

export function groupNode(group: PropertyGroup, ctx: DateContext, lookups: FilterLookups = {}): MaskNode {
  const parts = group.values.map(
    (v): MaskNode =>
      isGroup(v)
        ? groupNode(v, ctx, lookups)
        : isHogQLFilter(v)
          ? { kind: 'hogql', expr: compileColumnExpr(v.expr, evalContextOf(ctx), v.attr ?? 'properties') }
          : filterNode(v, ctx, lookups),
  );
  if (!parts.length) return ALL;
  return { kind: group.type === 'OR' ? 'or' : 'and', parts };
}

export const andNode = (...parts: MaskNode[]): MaskNode => {
  const kept = parts.filter((p) => !(p.kind === 'const' && p.value));
  return kept.length === 0 ? ALL : kept.length === 1 ? kept[0]! : { kind: 'and', parts: kept };
};

function answer(node: Extract<MaskNode, { kind: 'property' }>, value: unknown): boolean {
  if (typeof value === 'object' && value !== null) return node.test(value);
  let result = node.memo.get(value);
  if (result === undefined) {
    result = node.test(value);
    if (node.memo.size < MEMO_LIMIT) node.memo.set(value, result);
  }
  return result;
}

/** Spreads a per-dictionary-entry answer over the rows; constant when every entry answers alike. */
function spread(table: Uint8Array, indexes: Uint32Array | null, n: number): Mask {
  let ones = 0;
  for (let i = 0; i < table.length; i += 1) ones += table[i]!;
  if (ones === 0) return false;
  if (ones === table.length) return true;
  if (!indexes) return table[0] === 1;
  const mask = new Uint8Array(n);
  for (let i = 0; i < n; i += 1) mask[i] = table[indexes[i]!]!;
  return mask;
}

function propertyMask(node: Extract<MaskNode, { kind: 'property' }>, batch: ColumnBatch): Mask {
  if (node.group) return groupPropertyMask(node, node.group, batch);
  if (node.person) {
    const table = Uint8Array.from(batch.actors, (a) => (answer(node, propertyOf(a.properties, node.key)) ? 1 : 0));
    return spread(table, batch.actorIndexes, batch.n);
  }
  const column = batch.columns.get(node.key);
  if (!column) return answer(node, undefined);
  const table = new Uint8Array(column.dictionary.length + 1);
  table[0] = answer(node, undefined) ? 1 : 0;
  for (let v = 0; v < column.dictionary.length; v += 1) table[v + 1] = answer(node, column.dictionary[v]) ? 1 : 0;
  return spread(table, column.indexes, batch.n);
}

/** A group filter: answered once per group key of the batch's `$group_N` column (no group: the property is missing). */
function groupPropertyMask(
  node: Extract<MaskNode, { kind: 'property' }>,
  { index, lookup }: { index: number; lookup: GroupLookup },
  batch: ColumnBatch,
): Mask {
  const column = batch.columns.get(groupColumn(index));
  if (!column) return answer(node, undefined);
  const table = new Uint8Array(column.dictionary.length + 1);
  table[0] = answer(node, undefined) ? 1 : 0;
  for (let v = 0; v < column.dictionary.length; v += 1) {
    const key = groupKeyText(column.dictionary[v]);
    const properties = key === null ? undefined : lookup(index, key);
    table[v + 1] = answer(node, propertyOf(properties, node.key)) ? 1 : 0;
  }
  return spread(table, column.indexes, batch.n);
}

/** The rows of `batch` a node lets through. Returned arrays are fresh: callers may change them. */
export function evaluate(node: MaskNode, batch: ColumnBatch): Mask {
  switch (node.kind) {
    case 'const':
      return node.value;
    case 'name':
      return spread(
        Uint8Array.from(batch.names, (name) => (name === node.name ? 1 : 0)),
        batch.nameIndexes,
        batch.n,
      );
    case 'property':
      return propertyMask(node, batch);
    case 'cohort': {
      const { members, inside } = node;
      const table = new Uint8Array(batch.actors.length);
      for (let i = 0; i < table.length; i += 1)
        table[i] = isMember(members, batch.actors[i]!.person) === inside ? 1 : 0;
      return spread(table, batch.actorIndexes, batch.n);
    }
    case 'hogql': {
      const { table, indexes } = valuesOf(node.expr, batch);
      return spread(
        Uint8Array.from(table, (v) => (passes(v) ? 1 : 0)),
        indexes,
        batch.n,
      );
    }
    case 'and': {
      let acc: Uint8Array | null = null;
      for (const part of node.parts) {
        const m = evaluate(part, batch);
        if (m === false) return false;
        if (m === true) continue;
        if (!acc) acc = m;
        else for (let i = 0; i < acc.length; i += 1) acc[i] = acc[i]! & m[i]!;
      }
      return acc ?? true;
    }
    case 'or': {
      let acc: Uint8Array | null = null;
      for (const part of node.parts) {
        const m = evaluate(part, batch);
        if (m === true) return true;
        if (m === false) continue;
        if (!acc) acc = m;
        else for (let i = 0; i < acc.length; i += 1) acc[i] = acc[i]! | m[i]!;
      }
      return acc ?? false;
    }
  }
}
