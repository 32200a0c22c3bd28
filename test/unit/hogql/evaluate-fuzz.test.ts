/**
 * Random expressions built from the function table, over random rows: compiling and evaluating
 * either gives a value or a ValidationError carrying the caller's attr, never anything else.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import type { CompareOp, Constant, Expr } from '#shared/hogql/ast.ts';
import { compileAggregate, compileScalar } from '#shared/hogql/evaluate.ts';
import { AGGREGATE_FUNCTIONS, SCALAR_FUNCTIONS } from '#shared/hogql/functions/index.ts';
import { HogDate, HogDateTime, type HogValue } from '#shared/hogql/values.ts';
import { ATTR, ctx, reader, type Row } from './evaluate-helpers.ts';

const FIELDS = [
  ['event'],
  ['timestamp'],
  ['distinct_id'],
  ['properties', 'a'],
  ['properties', 'b'],
  ['properties', 'obj'],
  ['person', 'properties', 'email'],
  ['person', 'created_at'],
];

const STRINGS = [
  '',
  'a',
  '%',
  '_',
  '\\',
  '%a_\\%',
  '(a',
  '.*',
  '(?i)x',
  '2024-01-01',
  '2024-01-01 10:00:00',
  '1700000000',
  '12',
  '-3.5',
  'inf',
  'nan',
  'true',
  'day',
  'hour',
  'week',
  'UTC',
  'America/New_York',
  'Not/AZone',
  '%Y-%m-%d',
  '%Q %z',
  'https://user@example.com:8080/a/b?x=1&y=2#f',
  '{"a": {"b": [1, "two", null, true]}, "c": 1.5}',
  '[1,2,"3"]',
  'é😀',
  ',',
];

const constant: fc.Arbitrary<Constant> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 12 }),
  fc.constantFrom(0, 1, -1, 0.5, 1e9, -1e12, 1e300, Number.NaN, Number.POSITIVE_INFINITY, 65_537, 70_000),
  fc.double(),
  fc.constantFrom(...STRINGS),
  fc.string({ maxLength: 8 }),
);

const COMPARE_OPS: CompareOp[] = [
  'eq',
  'notEq',
  'lt',
  'ltEq',
  'gt',
  'gtEq',
  'like',
  'ilike',
  'notLike',
  'notILike',
  'in',
  'notIn',
  'regex',
  'notRegex',
  'iRegex',
  'notIRegex',
];

const value: fc.Arbitrary<HogValue> = fc.oneof(
  constant,
  fc.integer({ min: -1e6, max: 4e9 }).map((s) => new HogDateTime(s * 1000, 'Europe/Berlin')),
  fc.integer({ min: -30_000, max: 80_000 }).map((d) => new HogDate(d)),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 3 }), fc.constant(null)), { maxLength: 3 }),
);

const row: fc.Arbitrary<Row> = fc.record(
  Object.fromEntries(FIELDS.map((f) => [f.join('.'), value])) as Record<string, fc.Arbitrary<HogValue>>,
);

function scalarExpr(maxDepth: number): fc.Arbitrary<Expr> {
  const { expr } = fc.letrec<{ expr: Expr }>((tie) => ({
    expr: fc.oneof(
      { depthSize: 'small', maxDepth, withCrossShrink: true },
      constant.map((value): Expr => ({ kind: 'constant', value })),
      fc.constantFrom(...FIELDS).map((chain): Expr => ({ kind: 'field', chain: [...chain] })),
      fc
        .tuple(
          fc.constantFrom(...SCALAR_FUNCTIONS),
          fc.array(tie('expr'), { maxLength: 4 }),
          fc.integer({ min: 0, max: 2 }),
        )
        .map(([f, args, extra]): Expr => {
          const n = Math.min(Math.max(f.minArgs, args.length), f.minArgs + extra, f.maxArgs);
          const padded = [...args];
          while (padded.length < n) padded.push({ kind: 'constant', value: 1 });
          return { kind: 'call', name: f.name, args: padded.slice(0, n) };
        }),
      fc
        .tuple(fc.constantFrom(...COMPARE_OPS), tie('expr'), tie('expr'))
        .map(([op, left, right]): Expr => ({ kind: 'compare', op, left, right })),
      fc
        .tuple(fc.constantFrom('+', '-', '*', '/', '%' as const), tie('expr'), tie('expr'))
        .map(([op, left, right]): Expr => ({ kind: 'arithmetic', op, left, right })),
      fc.array(tie('expr'), { minLength: 1, maxLength: 3 }).map((exprs): Expr => ({ kind: 'and', exprs })),
      fc.array(tie('expr'), { minLength: 1, maxLength: 3 }).map((exprs): Expr => ({ kind: 'or', exprs })),
      tie('expr').map((expr): Expr => ({ kind: 'not', expr })),
      tie('expr').map((expr): Expr => ({ kind: 'negate', expr })),
      fc.array(tie('expr'), { maxLength: 3 }).map((items): Expr => ({ kind: 'array', items })),
      fc.array(tie('expr'), { minLength: 1, maxLength: 3 }).map((items): Expr => ({ kind: 'tuple', items })),
      fc
        .tuple(tie('expr'), tie('expr'), tie('expr'), fc.boolean())
        .map(([expr, low, high, negated]): Expr => ({ kind: 'between', expr, low, high, negated })),
    ),
  }));
  return expr;
}

function onlyValidationErrors(run: () => void): void {
  try {
    run();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    expect(error.attr).toBe(ATTR);
  }
}

describe('random expressions never fail with anything but a ValidationError', () => {
  it('scalar expressions over random rows', () => {
    fc.assert(
      fc.property(scalarExpr(4), fc.array(row, { minLength: 1, maxLength: 4 }), (expr, rows) => {
        let compiled: ((read: ReturnType<typeof reader>) => HogValue) | undefined;
        onlyValidationErrors(() => {
          compiled = compileScalar(expr, ctx, ATTR);
        });
        if (!compiled) return;
        for (const r of rows) onlyValidationErrors(() => compiled?.(reader(r)));
      }),
      { numRuns: 3_000 },
    );
  });

  it('aggregate expressions over random groups', () => {
    const aggregateCall = fc
      .tuple(
        fc.constantFrom(...AGGREGATE_FUNCTIONS),
        fc.array(scalarExpr(2), { maxLength: 3 }),
        fc.option(constant, { nil: undefined }),
      )
      .map(([f, args, param]): Expr => {
        const n = Math.min(Math.max(f.minArgs, args.length), f.maxArgs);
        const padded = [...args];
        while (padded.length < n) padded.push({ kind: 'field', chain: ['properties', 'a'] });
        return {
          kind: 'call',
          name: f.name,
          args: padded.slice(0, n),
          ...(f.minParams ? { params: [{ kind: 'constant', value: param ?? 0.5 }] } : {}),
        };
      });
    const expr = fc.oneof(
      aggregateCall,
      fc
        .tuple(fc.constantFrom('+', '/', '%' as const), aggregateCall, aggregateCall)
        .map(([op, left, right]): Expr => ({ kind: 'arithmetic', op, left, right })),
      fc
        .tuple(aggregateCall, fc.constantFrom(...FIELDS))
        .map(([a, chain]): Expr => ({ kind: 'call', name: 'concat', args: [a, { kind: 'field', chain: [...chain] }] })),
    );
    fc.assert(
      fc.property(expr, fc.array(row, { maxLength: 5 }), (e, rows) => {
        onlyValidationErrors(() => {
          const acc = compileAggregate(e, ctx, ATTR)();
          for (const r of rows) acc.add(reader(r));
          acc.result();
        });
      }),
      { numRuns: 1_500 },
    );
  });
});

describe('IN over a long constant list', () => {
  it('gives the same answers as comparing with each member', () => {
    const member = fc.oneof(
      fc.constantFrom('a', 'b', '1', '2.0', ' 3 ', 'nan', 'true', '', null),
      fc.constantFrom(1, 2, 3, 0, -0, Number.NaN),
      fc.string({ maxLength: 2 }),
      fc.integer({ min: -3, max: 3 }),
    );
    const left = fc.oneof(member, fc.boolean(), fc.constant(new HogDate(1)));
    fc.assert(
      fc.property(fc.array(member, { minLength: 8, maxLength: 20 }), left, (items, v) => {
        const list: Expr = { kind: 'tuple', items: items.map((value) => ({ kind: 'constant', value })) };
        const expected = items.some(
          (item) =>
            v !== null &&
            item !== null &&
            compileScalar(
              {
                kind: 'compare',
                op: 'eq',
                left: { kind: 'constant', value: v as Constant },
                right: { kind: 'constant', value: item },
              },
              ctx,
              ATTR,
            )(() => null) === true,
        );
        const got = compileScalar(
          { kind: 'compare', op: 'in', left: { kind: 'field', chain: ['x'] }, right: list },
          ctx,
          ATTR,
        )(() => v as HogValue);
        expect(got).toBe(expected);
      }),
      { numRuns: 2_000 },
    );
  });
});
