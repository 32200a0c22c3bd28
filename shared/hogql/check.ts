import { ValidationError } from '#shared/errors.ts';
import { asDateArithmetic, childrenOf, hasAggregate } from './analysis.ts';
import type { Expr } from './ast.ts';
import { checkIntervals } from './intervals.ts';
import { printHogQL } from './print.ts';

/**
 * What a parsed expression may mean where it is used: which fields exist (the scope), which functions
 * exist and how many arguments they take (the catalog, owned by functions/), and where aggregates may
 * stand. Parsing accepts any well-formed expression; this is where it is refused with a 400 naming
 * the field, function or construct.
 */

export interface FunctionSignature {
  name: string;
  minArgs: number;
  maxArgs: number;
  /** Parametric aggregates (`quantile(0.9)(x)`). */
  minParams?: number;
  maxParams?: number;
}

export interface FunctionCatalog {
  scalar(name: string): FunctionSignature | undefined;
  aggregate(name: string): FunctionSignature | undefined;
  /** Every supported name, for the 400 that lists them. */
  names(): string[];
}

/** `events`: EventsQuery, trends breakdowns, filters and math. `persons`: ActorsQuery over persons. */
export type Scope = 'events' | 'persons';

export interface CheckOptions {
  scope: Scope;
  /** `required`: math_hogql (one value per bucket). `allowed`: EventsQuery select. `forbidden`: the rest. */
  aggregates: 'forbidden' | 'allowed' | 'required';
  catalog: FunctionCatalog;
}

/** Plain columns of each scope; `properties.<key>` (and on events `person.properties.<key>`) besides. */
export const SCOPE_COLUMNS: Record<Scope, readonly string[]> = {
  events: [
    'event',
    'timestamp',
    'distinct_id',
    'uuid',
    'person_id',
    '$session_id',
    'elements_chain',
    'created_at',
    'person.created_at',
  ],
  persons: ['id', 'created_at', 'is_identified'],
};

const PROPERTY_ROOTS: Record<Scope, readonly (readonly string[])[]> = {
  events: [['properties'], ['person', 'properties']],
  persons: [['properties']],
};

/** Aggregates that take `DISTINCT` (ClickHouse's -Distinct combinator is not offered beyond these). */
const DISTINCT_AGGREGATES = new Set(['count', 'uniq', 'uniqexact']);

export function fieldList(scope: Scope): string {
  return [...SCOPE_COLUMNS[scope], ...PROPERTY_ROOTS[scope].map((r) => `${r.join('.')}.<key>`)].join(', ');
}

function at(e: Expr): string {
  return e.span ? ` at position ${e.span[0]}` : '';
}

function fieldKnown(chain: readonly string[], scope: Scope): boolean {
  for (const root of PROPERTY_ROOTS[scope]) {
    if (chain.length > root.length && root.every((part, i) => chain[i] === part)) return true;
  }
  return SCOPE_COLUMNS[scope].includes(chain.join('.'));
}

function arity(min: number, max: number, what: string): string {
  const range = min === max ? `${min}` : max === Number.POSITIVE_INFINITY ? `at least ${min}` : `${min} to ${max}`;
  return `${range} ${what}${min === max && min === 1 ? '' : 's'}`;
}

export function checkExpr(expr: Expr, options: CheckOptions, attr: string): void {
  const { catalog, scope } = options;
  const fail = (detail: string): never => {
    throw new ValidationError(detail, attr);
  };
  checkIntervals(expr, attr);
  const isAggregate = (name: string): boolean => catalog.aggregate(name) !== undefined;
  const aggregated = hasAggregate(expr, isAggregate);
  if (options.aggregates === 'required' && !aggregated) {
    fail(
      'HogQL expression must aggregate its events: use an aggregate function such as count(), sum(...) or avg(...).',
    );
  }

  const visit = (e: Expr, inside: string | null): void => {
    switch (e.kind) {
      case 'field':
        if (!fieldKnown(e.chain, scope)) {
          const name = printHogQL(e);
          const hint = PROPERTY_ROOTS[scope].some((r) => r.join('.') === e.chain.join('.'))
            ? ` needs a key (${name}.<key>)`
            : ' is not a field';
          fail(`HogQL: "${name}"${at(e)}${hint}. Fields: ${fieldList(scope)}.`);
        }
        if (aggregated && inside === null && options.aggregates !== 'forbidden') {
          fail(
            `HogQL: field "${printHogQL(e)}"${at(e)} must be inside an aggregate function: an expression with aggregates reads fields only through them.`,
          );
        }
        return;
      case 'call':
        checkCall(e, inside);
        return;
      case 'arithmetic': {
        // Where the catalog has dateAdd/dateSub, `x ± INTERVAL n unit` is one (else the interval is named below).
        const dated = asDateArithmetic(e);
        if (dated && catalog.scalar(dated.name)) visit(dated, inside);
        else for (const child of childrenOf(e)) visit(child, inside);
        return;
      }
      default:
        for (const child of childrenOf(e)) visit(child, inside);
    }
  };

  const checkCall = (e: Extract<Expr, { kind: 'call' }>, inside: string | null): void => {
    const aggregate = catalog.aggregate(e.name);
    const sig = aggregate ?? catalog.scalar(e.name);
    if (sig === undefined) {
      const interval = e.name.startsWith('toInterval')
        ? ' (INTERVAL n unit is read only added to or subtracted from a date, as dateAdd or dateSub)'
        : '';
      throw new ValidationError(
        `Unsupported function "${e.name}"${at(e)}${interval}. Supported functions: ${[...catalog.names()].sort().join(', ')}. See docs/hogql.md.`,
        attr,
      );
    }
    if (e.args.length < sig.minArgs || e.args.length > sig.maxArgs) {
      fail(`Function "${e.name}"${at(e)} takes ${arity(sig.minArgs, sig.maxArgs, 'argument')}, got ${e.args.length}.`);
    }
    const maxParams = sig.maxParams ?? 0;
    const minParams = sig.minParams ?? 0;
    if (e.params !== undefined) {
      if (maxParams === 0) fail(`Function "${e.name}"${at(e)} takes no parameters: write ${e.name}(...).`);
      if (e.params.length < minParams || e.params.length > maxParams) {
        fail(`Function "${e.name}"${at(e)} takes ${arity(minParams, maxParams, 'parameter')}, got ${e.params.length}.`);
      }
      for (const p of e.params) {
        if (p.kind !== 'constant' || typeof p.value !== 'number') {
          fail(`Function "${e.name}"${at(e)} takes number constants as parameters, as in ${e.name}(0.5)(x).`);
        }
      }
    } else if (minParams > 0) {
      fail(`Function "${e.name}"${at(e)} needs ${arity(minParams, maxParams, 'parameter')}, as in ${e.name}(0.5)(x).`);
    }
    if (e.distinct && !(aggregate && DISTINCT_AGGREGATES.has(e.name.toLowerCase()))) {
      fail(`HogQL: DISTINCT${at(e)} is supported only in count(DISTINCT x), uniq and uniqExact, not in "${e.name}".`);
    }
    if (aggregate) {
      if (options.aggregates === 'forbidden') {
        fail(
          `HogQL: aggregate function "${e.name}"${at(e)} is not allowed here; this expression is evaluated per event.`,
        );
      }
      if (inside !== null)
        fail(`HogQL: aggregate function "${e.name}"${at(e)} cannot be used inside another aggregate ("${inside}").`);
    }
    const next = aggregate ? e.name : inside;
    for (const p of e.params ?? []) visit(p, next);
    for (const a of e.args) visit(a, next);
  };

  visit(expr, null);
}
