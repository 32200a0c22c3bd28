import type { Expr } from './ast.ts';

/** The direct subexpressions of a node (a parametric call's parameters first). */
export function childrenOf(e: Expr): Expr[] {
  switch (e.kind) {
    case 'constant':
    case 'field':
      return [];
    case 'array':
    case 'tuple':
      return e.items;
    case 'call':
      return e.params ? [...e.params, ...e.args] : e.args;
    case 'not':
    case 'negate':
    case 'alias':
      return [e.expr];
    case 'and':
    case 'or':
      return e.exprs;
    case 'compare':
    case 'arithmetic':
      return [e.left, e.right];
    case 'between':
      return [e.expr, e.low, e.high];
  }
}

const INTERVAL_UNITS: Record<string, string> = {
  toIntervalSecond: 'second',
  toIntervalMinute: 'minute',
  toIntervalHour: 'hour',
  toIntervalDay: 'day',
  toIntervalWeek: 'week',
  toIntervalMonth: 'month',
  toIntervalQuarter: 'quarter',
  toIntervalYear: 'year',
};

/**
 * `x + INTERVAL n unit`, `INTERVAL n unit + x` and `x - INTERVAL n unit` (the parser's
 * toIntervalUnit(n)) as the dateAdd/dateSub call ClickHouse evaluates them as; null for any other node.
 */
export function asDateArithmetic(e: Expr): Extract<Expr, { kind: 'call' }> | null {
  if (e.kind !== 'arithmetic' || (e.op !== '+' && e.op !== '-')) return null;
  const isInterval = (x: Expr) =>
    x.kind === 'call' && Object.hasOwn(INTERVAL_UNITS, x.name) && x.args.length === 1 && !x.params && !x.distinct;
  const [step, value] = isInterval(e.right)
    ? [e.right, e.left]
    : e.op === '+' && isInterval(e.left)
      ? [e.left, e.right]
      : [null, null];
  if (step?.kind !== 'call' || !value) return null;
  const unit: Expr = { kind: 'constant', value: INTERVAL_UNITS[step.name] as string };
  return {
    kind: 'call',
    name: e.op === '+' ? 'dateAdd' : 'dateSub',
    args: [unit, step.args[0] as Expr, value],
    ...(e.span ? { span: e.span } : {}),
  };
}

/** Calls every node of the tree, parents first (iteratively: depth is capped, but no need to rely on it). */
export function walk(root: Expr, visit: (e: Expr) => void): void {
  const stack: Expr[] = [root];
  for (let e = stack.pop(); e !== undefined; e = stack.pop()) {
    visit(e);
    const children = childrenOf(e);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Expr);
  }
}

/** The distinct field chains an expression reads, in first-read order. */
export function fieldsOf(expr: Expr): string[][] {
  const seen = new Map<string, string[]>();
  walk(expr, (e) => {
    if (e.kind === 'field') {
      const key = JSON.stringify(e.chain);
      if (!seen.has(key)) seen.set(key, e.chain);
    }
  });
  return [...seen.values()];
}

export interface Needs {
  /** Columns read, dotted (`event`, `timestamp`, `person.created_at`; on persons `id`, `created_at`). */
  columns: string[];
  /**
   * Top-level keys under `properties.`: the row's own properties (the event's in the events scope,
   * the person's in the persons scope). `properties.$a.b` needs `$a`; `$session_id` needs `$session_id`.
   */
  properties: string[];
  /** Top-level keys under `person.properties.` (events scope). */
  personProperties: string[];
}

/** What a row must carry for the expression: the projection an engine reads before evaluating. */
export function needsOf(expr: Expr): Needs {
  const columns = new Set<string>();
  const properties = new Set<string>();
  const personProperties = new Set<string>();
  for (const chain of fieldsOf(expr)) {
    const [head, second, third] = chain;
    if (head === 'properties' && second !== undefined) properties.add(second);
    else if (head === '$session_id' && chain.length === 1) properties.add('$session_id');
    else if (head === 'person' && second === 'properties' && third !== undefined) personProperties.add(third);
    else columns.add(chain.join('.'));
  }
  return { columns: [...columns], properties: [...properties], personProperties: [...personProperties] };
}

/** Whether the expression calls an aggregate anywhere. */
export function hasAggregate(expr: Expr, isAggregate: (name: string) => boolean): boolean {
  let found = false;
  walk(expr, (e) => {
    if (e.kind === 'call' && isAggregate(e.name)) found = true;
  });
  return found;
}

/** The expression under any top-level `AS` aliases. */
export function unalias(expr: Expr): Expr {
  let e = expr;
  while (e.kind === 'alias') e = e.expr;
  return e;
}

/** The tree without its spans: for comparing trees parsed from different texts. */
export function withoutSpans(expr: Expr): Expr {
  const strip = (e: Expr): Expr => {
    switch (e.kind) {
      case 'constant':
        return { kind: 'constant', value: e.value };
      case 'field':
        return { kind: 'field', chain: [...e.chain] };
      case 'array':
      case 'tuple':
        return { kind: e.kind, items: e.items.map(strip) };
      case 'call': {
        const out: Extract<Expr, { kind: 'call' }> = { kind: 'call', name: e.name, args: e.args.map(strip) };
        if (e.params) out.params = e.params.map(strip);
        if (e.distinct) out.distinct = true;
        return out;
      }
      case 'not':
      case 'negate':
        return { kind: e.kind, expr: strip(e.expr) };
      case 'alias':
        return { kind: 'alias', alias: e.alias, expr: strip(e.expr) };
      case 'and':
      case 'or':
        return { kind: e.kind, exprs: e.exprs.map(strip) };
      case 'compare':
        return { kind: 'compare', op: e.op, left: strip(e.left), right: strip(e.right) };
      case 'arithmetic':
        return { kind: 'arithmetic', op: e.op, left: strip(e.left), right: strip(e.right) };
      case 'between':
        return { kind: 'between', expr: strip(e.expr), low: strip(e.low), high: strip(e.high), negated: e.negated };
    }
  };
  return strip(expr);
}
