/**
 * What a hostile tenant's worst inputs cost, in-process (no DynamoDB): each defence of the
 * hostile-tenant work run on the input that used to hang or exhaust the service, beside the cost of
 * the engine or pattern it replaced where that is still measurable in seconds. docs/reliability.md
 * ("Hostile tenant") quotes these figures.
 */
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
      ['formula of 100,000 characters (refused)', () => parseFormula(`${'('.repeat(50_000)}A${')'.repeat(50_000)}`, 1)],
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
