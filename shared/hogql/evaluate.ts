/**
 * Compiles a HogQL AST into closures once, so evaluating a row is a closure call: function lookups,
 * arity checks, LIKE patterns, regexes and time zones are resolved when compiling (when constant),
 * and constant subtrees are folded. compileScalar evaluates plain expressions; compileAggregate
 * expressions with aggregates, one accumulator per group.
 */
import { ValidationError } from '#shared/errors.ts';
import { asDateArithmetic } from './analysis.ts';
import type { CompareOp, Expr } from './ast.ts';
import { parseNumber, toText, truth } from './convert.ts';
import { CATALOG, COUNT_DISTINCT, findAggregate, findScalar, Site } from './functions/index.ts';
import type { Accumulator, AggregateFunction, ScalarFunction } from './functions/types.ts';
import { likeOf, regexOf } from './functions/strings.ts';
import {
  and3,
  compare,
  divide,
  inList,
  minus,
  modulo,
  multiply,
  negate,
  not3,
  or3,
  orderTest,
  plus,
} from './operators.ts';
import { HogTuple, type EvalContext, type HogValue } from './values.ts';

/** Reads one field of the current row: the chain of a `field` node. */
export type FieldReader = (chain: readonly string[]) => HogValue;
type Fn = (read: FieldReader) => HogValue;

interface Node {
  fn: Fn;
  /** Set when the subtree does not depend on the row. */
  constant?: { value: HogValue };
}

const constant = (value: HogValue): Node => ({ fn: () => value, constant: { value } });

interface Slot {
  fn: AggregateFunction;
  params: HogValue[];
  args: Fn[];
  site: Site;
}

class Compiler {
  readonly slots: Slot[] = [];
  /** Aggregate results of the group being finished, read by the closures standing for aggregate calls. */
  current: HogValue[] = [];

  constructor(
    readonly ctx: EvalContext,
    readonly attr: string,
    /** Whether aggregates are allowed at this level (false inside an aggregate's arguments and in compileScalar). */
    private aggregates: boolean,
    private insideAggregate = false,
  ) {}

  fail(detail: string): never {
    throw new ValidationError(detail, this.attr);
  }

  compile(e: Expr): Node {
    switch (e.kind) {
      case 'constant':
        return constant(e.value);
      case 'alias':
        return this.compile(e.expr);
      case 'field':
        return this.field(e.chain);
      case 'array':
      case 'tuple': {
        const items = e.items.map((i) => this.compile(i));
        const build =
          e.kind === 'array' ? (values: HogValue[]) => values : (values: HogValue[]) => new HogTuple(values);
        if (items.every((i) => i.constant)) return constant(build(items.map((i) => i.constant?.value ?? null)));
        const fns = items.map((i) => i.fn);
        return { fn: (read) => build(fns.map((f) => f(read))) };
      }
      case 'not':
        return this.fold([this.compile(e.expr)], ([a]) => not3(a ?? null));
      case 'negate':
        return this.fold([this.compile(e.expr)], ([a]) => negate(a ?? null));
      case 'and':
        return this.logic(
          e.exprs.map((x) => this.compile(x)),
          false,
        );
      case 'or':
        return this.logic(
          e.exprs.map((x) => this.compile(x)),
          true,
        );
      case 'arithmetic': {
        const dated = asDateArithmetic(e);
        if (dated) return this.compile(dated);
        const l = this.compile(e.left);
        const r = this.compile(e.right);
        const attr = this.attr;
        const op =
          e.op === '+' ? plus : e.op === '-' ? minus : e.op === '*' ? multiply : e.op === '/' ? divide : modulo;
        return this.fold([l, r], ([a, b]) => op(a ?? null, b ?? null, attr));
      }
      case 'compare':
        return this.nullSafe(e.op, this.compile(e.left), this.compile(e.right));
      case 'between': {
        const tz = this.ctx.timezone;
        const negated = e.negated;
        return this.fold([this.compile(e.expr), this.compile(e.low), this.compile(e.high)], ([x, lo, hi]) => {
          const a = compare(x ?? null, lo ?? null, tz);
          const b = compare(x ?? null, hi ?? null, tz);
          const ge = a === null ? null : a >= 0;
          const le = b === null ? null : b <= 0;
          return negated ? or3([ge === null ? null : !ge, le === null ? null : !le]) : and3([ge, le]);
        });
      }
      case 'call':
        return this.call(e);
    }
  }

  field(chain: readonly string[]): Node {
    if (!this.aggregates) return { fn: (read) => read(chain) };
    // A column outside any aggregate: the caller groups by it, so any row of the group gives its value.
    const index = this.slots.length;
    const anyFn = findAggregate('any') as AggregateFunction;
    this.slots.push({ fn: anyFn, params: [], args: [(read) => read(chain)], site: this.site('any') });
    return { fn: () => this.current[index] ?? null };
  }

  site(name: string): Site {
    return new Site(name, this.ctx, this.attr);
  }

  /** A node computed from its children, folded when they are all constant. */
  fold(children: Node[], f: (values: HogValue[]) => HogValue): Node {
    if (children.every((c) => c.constant)) return constant(f(children.map((c) => c.constant?.value ?? null)));
    if (children.length === 1) {
      const a = (children[0] as Node).fn;
      return { fn: (read) => f([a(read)]) };
    }
    if (children.length === 2) {
      const a = (children[0] as Node).fn;
      const b = (children[1] as Node).fn;
      return { fn: (read) => f([a(read), b(read)]) };
    }
    const fns = children.map((c) => c.fn);
    return { fn: (read) => f(fns.map((g) => g(read))) };
  }

  /** AND / OR, short-circuiting: a later operand is not evaluated once the answer is known. */
  logic(children: Node[], isOr: boolean): Node {
    if (children.every((c) => c.constant)) {
      const values = children.map((c) => c.constant?.value ?? null);
      return constant(isOr ? or3(values) : and3(values));
    }
    const fns = children.map((c) => c.fn);
    const decisive = isOr;
    return {
      fn: (read) => {
        let sawNull = false;
        for (const f of fns) {
          const t = truth(f(read));
          if (t === decisive) return decisive;
          if (t === null) sawNull = true;
        }
        return sawNull ? null : !decisive;
      },
    };
  }

  /**
   * A comparison operator as PostHog prints it for ClickHouse: never NULL. `x = NULL` is isNull(x),
   * `x != NULL` isNotNull(x); when a side is NULL, `=`/LIKE/ILIKE are true only if both are NULL,
   * `!=`/NOT LIKE/NOT ILIKE true unless both are, and every other operator is false. (The
   * function forms, `equals(x, y)`, keep ClickHouse's NULL result.)
   */
  nullSafe(op: CompareOp, l: Node, r: Node): Node {
    const positive = op === 'eq' || op === 'like' || op === 'ilike';
    const negative = op === 'notEq' || op === 'notLike' || op === 'notILike';
    if (positive || negative) {
      const nullSide = r.constant?.value === null ? l : l.constant?.value === null ? r : null;
      if (nullSide) return this.fold([nullSide], ([v]) => (v === null) === positive);
    }
    const inner = this.comparison(op, l, r);
    if (inner.constant) {
      const v = inner.constant.value;
      if (v !== null) return inner;
      // Both sides constant: decided by which are NULL, as below.
      const a = l.constant?.value ?? null;
      const b = r.constant?.value ?? null;
      return constant(positive ? a === null && b === null : negative ? a !== null || b !== null : false);
    }
    const f = inner.fn;
    const lf = l.fn;
    const rf = r.fn;
    if (positive)
      return {
        fn: (read) => {
          const v = f(read);
          return v !== null ? v : lf(read) === null && rf(read) === null;
        },
      };
    if (negative)
      return {
        fn: (read) => {
          const v = f(read);
          return v !== null ? v : lf(read) !== null || rf(read) !== null;
        },
      };
    return {
      fn: (read) => {
        const v = f(read);
        return v === null ? false : v;
      },
    };
  }

  comparison(op: CompareOp, l: Node, r: Node): Node {
    const tz = this.ctx.timezone;
    switch (op) {
      case 'eq':
      case 'notEq':
      case 'lt':
      case 'ltEq':
      case 'gt':
      case 'gtEq': {
        const test = orderTest(op);
        return this.fold([l, r], ([a, b]) => {
          const c = compare(a ?? null, b ?? null, tz);
          return c === null ? null : test(c);
        });
      }
      case 'in':
      case 'notIn': {
        const negated = op === 'notIn';
        const members = r.constant && !l.constant ? memberTest(r.constant.value, tz) : null;
        if (members) {
          const left = l.fn;
          return {
            fn: (read) => {
              const a = left(read);
              return a === null ? false : members(a) !== negated;
            },
          };
        }
        return this.fold([l, r], ([a, b]) => (a == null ? false : inList(a, b ?? null, tz) !== negated));
      }
      case 'like':
      case 'ilike':
      case 'notLike':
      case 'notILike': {
        const site = this.site(op);
        const ci = op === 'ilike' || op === 'notILike';
        const negated = op === 'notLike' || op === 'notILike';
        if (r.constant && r.constant.value !== null && !l.constant) {
          const matches = likeOf(site, toText(r.constant.value), ci);
          const left = l.fn;
          return {
            fn: (read) => {
              const a = left(read);
              return a === null ? null : matches(toText(a)) !== negated;
            },
          };
        }
        return this.fold([l, r], ([a, b]) =>
          a == null || b == null ? null : likeOf(site, toText(b), ci)(toText(a)) !== negated,
        );
      }
      default: {
        const site = this.site(op);
        const ci = op === 'iRegex' || op === 'notIRegex';
        const negated = op === 'notRegex' || op === 'notIRegex';
        const patternOf = (p: HogValue) => (ci ? `(?i)${toText(p)}` : toText(p));
        if (r.constant && r.constant.value !== null && !l.constant) {
          const regex = regexOf(site, patternOf(r.constant.value));
          const left = l.fn;
          return {
            fn: (read) => {
              const a = left(read);
              return a === null ? null : regex.test(toText(a)) !== negated;
            },
          };
        }
        return this.fold([l, r], ([a, b]) =>
          a == null || b == null ? null : regexOf(site, patternOf(b)).test(toText(a)) !== negated,
        );
      }
    }
  }

  call(e: Extract<Expr, { kind: 'call' }>): Node {
    const aggregate = e.distinct ? findAggregate(e.name) && COUNT_DISTINCT : findAggregate(e.name);
    if (e.distinct && (e.name.toLowerCase() !== 'count' || e.args.length === 0))
      this.fail(`DISTINCT is supported only as count(DISTINCT expr), not in ${e.name}().`);
    if (aggregate) return this.aggregateCall(e, aggregate);
    const f = findScalar(e.name);
    if (!f)
      this.fail(`Unsupported function "${e.name.slice(0, 100)}". Supported functions: ${CATALOG.names().join(', ')}.`);
    if (e.params?.length) this.fail(`Function "${f.name}" takes no parameters.`);
    this.arity(f.name, e.args.length, f.minArgs, f.maxArgs);
    return this.scalarCall(
      f,
      e.args.map((a) => this.compile(a)),
    );
  }

  arity(name: string, n: number, min: number, max: number): void {
    if (n < min || n > max) {
      const expected =
        min === max ? `${min}` : max === Number.POSITIVE_INFINITY ? `at least ${min}` : `${min} to ${max}`;
      this.fail(`Function "${name}" takes ${expected} argument${max === 1 && min === 1 ? '' : 's'}, found ${n}.`);
    }
  }

  scalarCall(f: ScalarFunction, args: Node[]): Node {
    const site = this.site(f.name);
    // Lazy forms: a branch not taken is not evaluated (so it cannot fail on this row).
    if (f.name === 'if' || f.name === 'multiIf') return this.conditional(args);
    if (f.name === 'coalesce' || f.name === 'ifNull') return this.firstNonNull(args);
    if (f.name === 'and' || f.name === 'or') return this.logic(args, f.name === 'or');
    const propagate = f.nullable !== false;
    const impl = f.impl;
    const run = propagate
      ? (values: HogValue[]) => {
          for (const v of values) if (v === null) return null;
          return impl(values, site);
        }
      : (values: HogValue[]) => impl(values, site);
    if (!args.every((a) => a.constant) && f.constantArgs?.some((i) => args[i]?.constant)) this.probe(f, args, site);
    return this.fold(args, run);
  }

  /** Compiles constant patterns, formats and zones now, so a bad one is a 400 before any row is read. */
  probe(f: ScalarFunction, args: Node[], site: Site): void {
    const values = args.map((a) => (a.constant ? a.constant.value : ''));
    if (values.some((v) => v === null)) return;
    try {
      f.impl(values, site);
    } catch (error) {
      if (error instanceof ValidationError) throw error;
    }
  }

  conditional(args: Node[]): Node {
    if (args.length % 2 === 0) this.fail('multiIf takes an odd number of arguments: conditions, values and a default.');
    if (args.every((a) => a.constant)) {
      const v = args.map((a) => a.constant?.value ?? null);
      for (let i = 0; i + 1 < v.length; i += 2) if (truth(v[i] ?? null) === true) return constant(v[i + 1] ?? null);
      return constant(v[v.length - 1] ?? null);
    }
    const fns = args.map((a) => a.fn);
    const last = fns[fns.length - 1] as Fn;
    return {
      fn: (read) => {
        for (let i = 0; i + 1 < fns.length; i += 2)
          if (truth((fns[i] as Fn)(read)) === true) return (fns[i + 1] as Fn)(read);
        return last(read);
      },
    };
  }

  firstNonNull(args: Node[]): Node {
    if (args.every((a) => a.constant))
      return constant(args.find((a) => a.constant?.value !== null)?.constant?.value ?? null);
    const fns = args.map((a) => a.fn);
    return {
      fn: (read) => {
        for (const f of fns) {
          const v = f(read);
          if (v !== null) return v;
        }
        return null;
      },
    };
  }

  aggregateCall(e: Extract<Expr, { kind: 'call' }>, f: AggregateFunction): Node {
    if (!this.aggregates)
      this.fail(
        this.insideAggregate
          ? `Aggregate function "${e.name.slice(0, 100)}" cannot be nested inside another aggregate.`
          : `Aggregate function "${e.name.slice(0, 100)}" is not allowed here: this expression is evaluated per row.`,
      );
    this.arity(f.name, e.args.length, f.minArgs, f.maxArgs);
    const params = (e.params ?? []).map((p) => {
      const n = new Compiler(this.ctx, this.attr, false).compile(p);
      if (!n.constant) this.fail(`The parameters of "${f.name}" must be constants.`);
      return n.constant.value;
    });
    const [minParams, maxParams] = [f.minParams ?? 0, f.maxParams ?? 0];
    if (params.length < minParams || params.length > maxParams)
      this.fail(
        maxParams === 0
          ? `Aggregate "${f.name}" takes no parameters.`
          : `Aggregate "${f.name}" takes ${minParams} parameter${minParams === 1 ? '' : 's'}, as in ${f.name}(0.9)(x); found ${params.length}.`,
      );
    const inner = new Compiler(this.ctx, this.attr, false, true);
    const args = e.args.map((a) => inner.compile(a).fn);
    const site = this.site(f.name);
    // Build one accumulator now so a bad parameter (quantile(2)) fails before any row.
    f.make(params, site);
    const index = this.slots.length;
    this.slots.push({ fn: f, params, args, site });
    return { fn: () => this.current[index] ?? null };
  }
}

/**
 * Membership in a constant list of strings and numbers by hash lookups instead of a scan per row
 * (`IN` lists of a thousand values are common in saved filters). Same answers as inList: text
 * meets a number when the whole text is one. Null when the list has other kinds of values.
 */
function memberTest(list: HogValue, tz: string): ((v: HogValue) => boolean) | null {
  const items = Array.isArray(list) ? (list as readonly HogValue[]) : list instanceof HogTuple ? list.items : null;
  if (!items || items.length < 8) return null;
  const texts = new Set<string>();
  const numbers = new Set<number>();
  /** Text members that are numbers, for a number on the left. */
  const numericTexts = new Set<number>();
  for (const item of items) {
    if (typeof item === 'string') {
      texts.add(item);
      const n = parseNumber(item);
      if (n !== null && !Number.isNaN(n)) numericTexts.add(n);
    } else if (typeof item === 'number') {
      if (!Number.isNaN(item)) numbers.add(item);
    } else if (item !== null) return null;
  }
  return (v) => {
    if (typeof v === 'string') {
      if (texts.has(v)) return true;
      if (numbers.size === 0) return false;
      const n = parseNumber(v);
      return n !== null && numbers.has(n);
    }
    if (typeof v === 'number') return numbers.has(v) || numericTexts.has(v);
    return inList(v, items, tz);
  };
}

/** A plain expression as a function of a row. Aggregates here are a 400. */
export function compileScalar(expr: Expr, ctx: EvalContext, attr: string): (read: FieldReader) => HogValue {
  return new Compiler(ctx, attr, false).compile(expr).fn;
}

/**
 * An expression with aggregates (`sum(x) / count()`, `round(avg(toFloat(properties.price)), 2)`):
 * each call of the factory gives one group's accumulator. Fields outside aggregates take the value
 * of the group's first row (the caller groups by them, so every row of the group has it).
 */
export function compileAggregate(
  expr: Expr,
  ctx: EvalContext,
  attr: string,
): () => { add(read: FieldReader): void; result(): HogValue } {
  const compiler = new Compiler(ctx, attr, true);
  const outer = compiler.compile(expr).fn;
  const slots = compiler.slots;
  return () => {
    const accumulators: Accumulator[] = slots.map((s) => s.fn.make(s.params, s.site));
    return {
      add(read) {
        for (let i = 0; i < slots.length; i++) {
          const slot = slots[i] as Slot;
          const values = slot.args.map((f) => f(read));
          (accumulators[i] as Accumulator).add(values);
        }
      },
      result() {
        compiler.current = accumulators.map((a) => a.result());
        const noRow: FieldReader = () => null;
        return outer(noRow);
      },
    };
  };
}

/** The reference: one row's value, compiling each time (for tests). */
export function evaluateRow(expr: Expr, read: FieldReader, ctx: EvalContext, attr: string): HogValue {
  return compileScalar(expr, ctx, attr)(read);
}
