/**
 * What a hostile tenant's worst inputs cost, in-process (no DynamoDB): each defence of the
 * hostile-tenant work run on the input that used to hang or exhaust the service, beside the cost of
 * the engine or pattern it replaced where that is still measurable in seconds. docs/reliability.md
 * ("Hostile tenant") quotes these figures.
 */
import { compareKeys, valueKey } from '#shared/domain/query/actors.ts';
import { sortByKey } from '#shared/domain/query/sort.ts';
import { parseExportQuery } from '#shared/exports/hogql.ts';
import { windowCount } from '#shared/exports/intervals.ts';
import { parseFormula } from '#shared/trends/formula.ts';
import { parseTrendRequest } from '#shared/trends/parse.ts';
import { compileRegex } from '#shared/trends/properties.ts';
import { fixed, heading, table } from './lib/format.ts';
import { median } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';

const TARGET_MS = 100;
const RUNS = 5;

function timeMs(run: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    const started = performance.now();
    try {
      run();
    } catch {
      // refusals (400s) are the point of several cases: their cost is what is measured
    }
    times.push(performance.now() - started);
  }
  return median(times);
}

const deepGroup = (depth: number) =>
  `${'{"type":"AND","values":['.repeat(depth)}{"key":"k","value":"v"}${']}'.repeat(depth)}`;

const CATASTROPHIC = '^(a+)+$';

/** The ActorsQuery value sort's budget for its largest input (the person scan cap's order of rows). */
const SORT_TARGET_MS = 1_000;

/**
 * An ActorsQuery ordered by a property whose values are 9 KB objects that differ only at their end
 * (the worst case for comparing them), 4,000 persons: the sort key computed once per row, against the
 * comparator it replaced, which stringified both values on every comparison.
 */
function actorsSortRows(): SummaryRow[] {
  const rows = Array.from({ length: 4_000 }, (_, i) => ({
    value: { blob: `${'x'.repeat(9_000)}${String((i * 7919) % 4_000).padStart(6, '0')}` } as unknown,
    sortKey: String(i).padStart(12, '0'),
  }));
  const once = timeMs(() =>
    sortByKey(
      rows,
      (r) => valueKey(r.value, r.sortKey),
      (a, b) => compareKeys({ ascending: true }, a, b),
      () => {},
    ),
  );
  const replaced = timeMs(() =>
    [...rows].sort((a, b) => {
      const [x, y] = [JSON.stringify(a.value), JSON.stringify(b.value)];
      return x < y ? -1 : x > y ? 1 : a.sortKey < b.sortKey ? -1 : 1;
    }),
  );
  return [
    {
      benchmark: 'hostile',
      metric: 'ActorsQuery sort: 4,000 rows of 9 KB values (key once per row)',
      value: `${fixed(once, 0)} ms`,
      target: `< ${SORT_TARGET_MS} ms`,
      status: once < SORT_TARGET_MS ? 'pass' : 'OVER TARGET',
    },
    {
      benchmark: 'hostile',
      metric: 'the same sort stringifying both values per comparison (replaced)',
      value: `${fixed(replaced, 0)} ms`,
      target: '-',
      status: 'info',
    },
  ];
}

export const hostileBenchmark: Benchmark = {
  name: 'hostile',
  title: "A hostile tenant's worst inputs, in-process",
  async run(): Promise<BenchResult> {
    heading(this.title);
    const defended: [string, () => unknown][] = [
      [
        `regex ${CATASTROPHIC} (RE2) vs 'a' x 10,000 + '!'`,
        () => compileRegex(CATASTROPHIC, null).test(`${'a'.repeat(10_000)}!`),
      ],
      [
        `regex ${CATASTROPHIC} (RE2) vs 'a' x 100,000 + '!'`,
        () => compileRegex(CATASTROPHIC, null).test(`${'a'.repeat(100_000)}!`),
      ],
      [
        'hogql_query with 10,000 spaces (scanner)',
        () => parseExportQuery(`select uuid,${' '.repeat(10_000)}event from events`),
      ],
      [
        'trend properties 10,000 deep (refused)',
        () => parseTrendRequest({ events: '[{"id":"e"}]', properties: deepGroup(10_000) }),
      ],
      [
        'formula of 100,000 characters (refused)',
        () => parseFormula(`${'('.repeat(50_000)}A${')'.repeat(50_000)}`, 1, 'formula'),
      ],
      [
        'backfill 2000-01-01..now every 5 minutes: window count',
        () => windowCount(new Date('2000-01-01T00:00:00Z'), new Date(), 'every 5 minutes'),
      ],
    ];
    const rows: SummaryRow[] = defended.map(([metric, run]) => {
      const ms = timeMs(run);
      return {
        benchmark: 'hostile',
        metric,
        value: `${fixed(ms, 2)} ms`,
        target: `< ${TARGET_MS} ms`,
        status: ms < TARGET_MS ? 'pass' : 'OVER TARGET',
      };
    });
    // What the replaced engine costs: V8's backtracking RegExp doubles its time with each 'a'.
    for (const n of [22, 24, 26]) {
      const ms = timeMs(() => new RegExp(CATASTROPHIC).test(`${'a'.repeat(n)}!`));
      rows.push({
        benchmark: 'hostile',
        metric: `regex ${CATASTROPHIC} (V8, replaced) vs 'a' x ${n} + '!'`,
        value: `${fixed(ms, 0)} ms`,
        target: '-',
        status: 'info',
      });
    }
    rows.push(...actorsSortRows());
    console.log(
      table(
        ['case', 'median of 5'],
        rows.map((r) => [r.metric, r.value]),
        ['l', 'r'],
      ),
    );
    return { rows, errors: [] };
  },
};
