/**
 * Regex filter throughput: test() calls over URLs and user agents with five typical filter patterns,
 * shared/regex against re2js (the engine it replaced, kept as the differential test's reference), in
 * the same process and run, alternating which goes first so machine load weighs on both alike.
 */
import { RE2JS } from 're2js';
import { Regex } from '#shared/regex/index.ts';
import { fixed, heading, table } from './lib/format.ts';
import type { Benchmark, BenchResult } from './lib/types.ts';

const CALLS = 1_000_000;
const ROUNDS = 4;

const PATTERNS = [
  '^https?://[^/]+/(docs|blog)/.*$',
  '(?i)chrome|firefox',
  '\\.(png|jpe?g|gif)$',
  '^/products/\\d+$',
  '(?i)^mozilla/5\\.0 .*(iphone|android)',
];

const TEXTS = [
  'https://posthog.com/docs/libraries/js',
  'https://example.com/blog/2024/01/hello-world?utm_source=newsletter',
  'http://shop.example.org/products/12345',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
  '/products/987',
  'https://cdn.example.com/img/logo.png',
  '/pricing',
  'https://app.example.com/insights/new#filters',
];

/** ns per test() over CALLS calls, each pattern against each text in turn; and how many matched. */
function nsPerCall(engines: { test(s: string): boolean }[]): [number, number] {
  let hits = 0;
  for (let i = 0; i < 50_000; i++) engines[i % engines.length]!.test(TEXTS[i % TEXTS.length]!);
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++)
    if (engines[i % engines.length]!.test(TEXTS[Math.floor(i / engines.length) % TEXTS.length]!)) hits++;
  return [Number(process.hrtime.bigint() - started) / CALLS, hits];
}

export const regexBenchmark: Benchmark = {
  name: 'regex',
  title: 'Regex filter throughput: shared/regex vs re2js',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const mine = PATTERNS.map((p) => new Regex(p));
    const reference = PATTERNS.map((p) => RE2JS.compile(p));
    const ns = { mine: [] as number[], reference: [] as number[] };
    const errors: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? (['reference', 'mine'] as const) : (['mine', 'reference'] as const);
      const hits: number[] = [];
      for (const which of order) {
        const [perCall, matched] = nsPerCall(which === 'mine' ? mine : reference);
        ns[which].push(perCall);
        hits.push(matched);
      }
      if (hits[0] !== hits[1]) errors.push(`regex: the engines disagree (${hits[0]} vs ${hits[1]} matches)`);
    }
    const best = (xs: number[]) => Math.min(...xs);
    console.log(
      table(
        ['engine', 'ns per test() (best of rounds)', 'rounds (ns)'],
        [
          ['shared/regex', fixed(best(ns.mine), 0), ns.mine.map((n) => fixed(n, 0)).join(' ')],
          ['re2js', fixed(best(ns.reference), 0), ns.reference.map((n) => fixed(n, 0)).join(' ')],
        ],
      ),
    );
    console.log(`${CALLS.toLocaleString('en')} calls per round: ${PATTERNS.length} patterns x ${TEXTS.length} texts`);
    const ratio = best(ns.mine) / best(ns.reference);
    return {
      rows: [
        {
          benchmark: 'regex',
          metric: 'test() ns per call, shared/regex / re2js',
          value: `${fixed(best(ns.mine), 0)} / ${fixed(best(ns.reference), 0)} ns`,
          target: '<= re2js',
          status: ratio <= 1 ? 'pass' : 'OVER TARGET',
        },
      ],
      errors,
    };
  },
};
