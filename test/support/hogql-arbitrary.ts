/**
 * Random HogQL text for the fuzz: expressions drawn from the grammar (most parse, many are
 * ill-typed or call unknown functions), token soups, and pathological shapes (deep nesting, long
 * chains, huge literals, catastrophic regexes). Whatever the text, the service answers 2xx or 4xx.
 */
import fc from 'fast-check';

const FIELDS = [
  'event',
  'timestamp',
  'distinct_id',
  'uuid',
  'person_id',
  '$session_id',
  'elements_chain',
  'properties.$browser',
  'properties.$os',
  'properties.price',
  "properties['a b']",
  'properties.$a.b',
  'properties.hostile',
  'person.properties.email',
  'person.created_at',
  'nothing.here',
];

const FUNCTIONS = [
  'toString',
  'toInt',
  'toFloat',
  'toDate',
  'toDateTime',
  'if',
  'multiIf',
  'coalesce',
  'ifNull',
  'lower',
  'upper',
  'length',
  'concat',
  'substring',
  'replaceAll',
  'replaceRegexpAll',
  'splitByChar',
  'match',
  'extract',
  'leftPad',
  'rightPad',
  'repeat',
  'domain',
  'extractURLParameter',
  'JSONExtractString',
  'JSONExtractRaw',
  'round',
  'pow',
  'intDiv',
  'modulo',
  'toStartOfWeek',
  'dateDiff',
  'dateAdd',
  'formatDateTime',
  'toTimeZone',
  'fromUnixTimestamp',
  'has',
  'arrayElement',
  'count',
  'countIf',
  'sum',
  'avg',
  'uniq',
  'median',
  'argMax',
  'sleep',
  'system.numbers',
  'noSuchFunction',
];

const BINARY = [
  '+',
  '-',
  '*',
  '/',
  '%',
  '=',
  '==',
  '!=',
  '<>',
  '<',
  '<=',
  '>',
  '>=',
  'AND',
  'OR',
  '||',
  '=~',
  '!~',
  '=~*',
  'LIKE',
  'ILIKE',
  'NOT LIKE',
  'IN',
  'NOT IN',
];

const literal = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.constantFrom('1e309', '-0', '0x1F', '9223372036854775808', 'inf', 'nan', 'null', 'true', 'false', 'NULL'),
  fc.string({ maxLength: 12 }).map((s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`),
  fc.constantFrom("'%/pricing%'", "'^(a+)+$'", "'(a|aa)*b'", "'[unclosed'", "'\\\\'", "''''", "'%'", "'_'"),
);

const { expr } = fc.letrec<{ expr: string; call: string; op: string; special: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: fc.constantFrom(...FIELDS) },
    { weight: 3, arbitrary: literal },
    { weight: 3, arbitrary: tie('call') },
    { weight: 3, arbitrary: tie('op') },
    { weight: 2, arbitrary: tie('special') },
  ),
  call: fc
    .tuple(
      fc.constantFrom(...FUNCTIONS),
      fc.array(tie('expr'), { maxLength: 3 }),
      fc.option(fc.constantFrom('0.5', '0.9', "'x'"), { nil: undefined }),
      fc.boolean(),
    )
    .map(([name, args, param, distinct]) =>
      param !== undefined
        ? `quantile(${param})(${args.join(', ')})`
        : `${name}(${distinct && args.length ? 'DISTINCT ' : ''}${args.join(', ')})`,
    ),
  op: fc
    .tuple(tie('expr'), fc.constantFrom(...BINARY), tie('expr'))
    .map(([a, op, b]) => (op.endsWith('IN') ? `${a} ${op} (${b}, ${a})` : `(${a} ${op} ${b})`)),
  special: fc.oneof(
    tie('expr').map((e) => `NOT ${e}`),
    tie('expr').map((e) => `-${e}`),
    tie('expr').map((e) => `${e} IS NOT NULL`),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([a, b, c]) => `${a} BETWEEN ${b} AND ${c}`),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([a, b, c]) => `CASE WHEN ${a} THEN ${b} ELSE ${c} END`),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([a, b, c]) => `${a} ? ${b} : ${c}`),
    fc.tuple(tie('expr'), fc.integer({ min: -3, max: 3 })).map(([a, i]) => `${a}[${i}]`),
    fc.array(tie('expr'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
    tie('expr').map((e) => `${e} AS alias`),
    tie('expr').map((e) => `${e} -- label`),
    tie('expr').map((e) => `/* c */ ${e}`),
  ),
}));

const TOKENS = [
  '(',
  ')',
  '[',
  ']',
  ',',
  "'",
  '"',
  '`',
  '.',
  '?',
  ':',
  '--',
  '/*',
  '*/',
  'CASE',
  'WHEN',
  'THEN',
  'END',
  'SELECT',
  'FROM',
  ';',
  ...BINARY,
  ...FIELDS.slice(0, 6),
];

const tokenSoup = fc.array(fc.constantFrom(...TOKENS), { maxLength: 30 }).map((t) => t.join(' '));

const pathological = fc.constantFrom(
  `${'('.repeat(5_000)}1${')'.repeat(5_000)}`,
  Array.from({ length: 3_000 }, () => '1').join(' + '),
  `concat(${Array.from({ length: 2_000 }, () => "'x'").join(', ')})`,
  `repeat('x', 1000000000)`,
  `leftPad('x', 1000000000, 'y')`,
  `replaceRegexpAll(properties.hostile, '(a+)+$', 'b')`,
  `match(properties.hostile, '${'(a|'.repeat(500)}b${')'.repeat(500)}')`,
  `'${'x'.repeat(20_000)}'`,
  'x'.repeat(10_001),
  `arrayElement(splitByChar(',', ${"'a,'".repeat(3)}), 1000000)`,
  `toDateTime('99999-01-01')`,
  'dateAdd(day, 100000000, timestamp)',
  "formatDateTime(timestamp, '%%%%%%%%%%%%%%%%')",
  'properties.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p',
  'count(count())',
  'sum(properties.price) / count() AS ratio',
);

/** HogQL text for any field that takes an expression. */
export const hogqlText: fc.Arbitrary<string> = fc.oneof(
  { weight: 10, arbitrary: expr },
  { weight: 3, arbitrary: tokenSoup },
  { weight: 2, arbitrary: pathological },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);
