/**
 * The web console in Chromium (playwright-core) against a child local stack, with real captured data:
 *
 * 1. First render of the Trends page with a warm cache: wall time from `page.goto` of a trend's URL
 *    to the app's `#app[data-state="ready"]` (its newest render has drawn the page: question asked
 *    through /query, headline, chart, legend and table drawn). Warm means the browser holds the
 *    versioned assets (served immutable) and the service holds the answer (the query cache): the
 *    URL is loaded BENCH_CONSOLE_WARMUP times first, then BENCH_CONSOLE_RUNS times measured.
 * 2. A 10-series × 90-day chart drawn: the trend is `$pageview` by `$browser` (10 values) over
 *    the last 90 days by day (91 points a series). The page times its own uPlot draw (from the
 *    answer to the first `draw` hook, console/trends.ts) and reports it as `#chart[data-draw-ms]`;
 *    each measured load gives one figure.
 *
 * Events go in through `/batch` (the real ingest path) and the bench waits until the API's own answer
 * counts them all, so the page shows exactly what was captured.
 */
import { chromium, type Page } from 'playwright-core';
import { ensureChromium } from '#infra/local/chromium.ts';
import { startChildStack } from './lib/local-stack.ts';
import { fixed, heading, table } from './lib/format.ts';
import { median, percentile } from './lib/stats.ts';
import type { Benchmark, BenchResult, SummaryRow } from './lib/types.ts';

const intEnv = (name: string, fallback: number) => Number(process.env[name] || fallback);

const SERIES = 10;
const DAYS = 90;
/** The console's form for the trend (console/trends.ts TrendsForm), as it puts it in the URL. */
const FORM = {
  events: ['$pageview'],
  math: 'total',
  breakdown: '$browser',
  date_from: '-90d',
  interval: 'day',
  compare: false,
  formula: '',
  display: 'ActionsLineGraph',
};
/** The same question as the console sends it to /query. */
const QUERY = {
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: '$pageview', name: '$pageview', math: 'total' }],
  dateRange: { date_from: '-90d' },
  interval: 'day',
  breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
  trendsFilter: { display: 'ActionsLineGraph' },
};
const RENDER_TARGET_MS = 1000;
const DRAW_TARGET_MS = 100;
const SEED_TIMEOUT_MS = 600_000;

/** One event per (browser, day), 1–3 of them so the lines differ; an hour before "now minus d days". */
function seedEvents(): Record<string, unknown>[] {
  const now = Date.now();
  const events: Record<string, unknown>[] = [];
  for (let d = 0; d < DAYS; d += 1) {
    for (let b = 0; b < SERIES; b += 1) {
      for (let k = 0; k <= (d + b) % 3; k += 1) {
        events.push({
          event: '$pageview',
          distinct_id: `bench-user-${b}-${k}`,
          timestamp: new Date(now - d * 86_400_000 - 3_600_000 - k * 60_000).toISOString(),
          properties: { $browser: `Browser ${b}`, $current_url: `https://example.com/${d}` },
        });
      }
    }
  }
  return events;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type TrendAnswer = { results: { count: number; data: number[] }[] };

/**
 * The trend computed now (`force_blocking`); past the blocking budget (a loaded machine) the API runs it
 * in the background and answers 202 with its `query_status`, which is followed to its end.
 */
async function ask(base: string, projectId: number, key: string): Promise<TrendAnswer> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const res = await fetch(`${base}/api/environments/${projectId}/query/`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: QUERY, refresh: 'force_blocking' }),
  });
  if (res.status !== 200 && res.status !== 202) throw new Error(`/query answered ${res.status}: ${await res.text()}`);
  let answer = (await res.json()) as TrendAnswer & {
    query_status?: { id: string; complete: boolean; results?: TrendAnswer };
  };
  while (answer.query_status && !answer.query_status.complete) {
    await sleep(1000);
    const poll = await fetch(`${base}/api/environments/${projectId}/query/${answer.query_status.id}/`, { headers });
    if (poll.status !== 200 && poll.status !== 202)
      throw new Error(`/query/${answer.query_status.id}/ answered ${poll.status}: ${await poll.text()}`);
    answer = (await poll.json()) as typeof answer;
  }
  return answer.results === undefined && answer.query_status?.results ? answer.query_status.results : answer;
}

/** Waits for the console's newest render; a failed one stops the benchmark with what the page says. */
async function ready(page: Page): Promise<void> {
  const app = page.locator('#app[data-state="ready"], #app[data-state="failed"]');
  await app.waitFor();
  if ((await app.getAttribute('data-state')) !== 'ready')
    throw new Error(`the console failed: ${((await page.locator('body').textContent()) ?? '').slice(-500)}`);
}

export const consoleBenchmark: Benchmark = {
  name: 'console',
  title: 'Web console in Chromium: Trends first render (warm cache), 10-series × 90-day chart draw',
  async run(): Promise<BenchResult> {
    heading(this.title);
    const warmup = intEnv('BENCH_CONSOLE_WARMUP', 3);
    const runs = intEnv('BENCH_CONSOLE_RUNS', 15);
    const executablePath = await ensureChromium();
    const stack = await startChildStack({ scheduler: false });
    const browser = await chromium.launch({ executablePath });
    try {
      const { info } = stack;
      const base = info.base_url;
      const events = seedEvents();
      const started = performance.now();
      for (let i = 0; i < events.length; i += 500) {
        const res = await fetch(`${base}/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ api_key: info.project_token, batch: events.slice(i, i + 500) }),
        });
        if (res.status !== 200) throw new Error(`/batch answered ${res.status}: ${await res.text()}`);
      }
      // Ingestion is asynchronous: ask (without the cache) until the answer counts every event.
      const deadline = Date.now() + SEED_TIMEOUT_MS;
      let counted = 0;
      let lines = 0;
      while (counted !== events.length || lines !== SERIES) {
        if (Date.now() > deadline)
          throw new Error(`ingested ${counted} of ${events.length} events in ${SEED_TIMEOUT_MS / 1000} s`);
        await sleep(1000);
        const answer = await ask(base, info.project_id, info.personal_api_key);
        counted = answer.results.reduce((sum, s) => sum + s.count, 0);
        lines = answer.results.length;
      }
      console.log(
        `captured ${events.length} events (${SERIES} browsers × ${DAYS} days) through /batch, ingested in ${fixed((performance.now() - started) / 1000)} s`,
      );

      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      context.setDefaultTimeout(120_000);
      const page = await context.newPage();
      await page.goto(`${base}/`);
      await page.getByLabel('Personal API key').fill(info.personal_api_key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await ready(page);
      const url = `${base}/?${new URLSearchParams({ page: 'trends', project: String(info.project_id), q: JSON.stringify(FORM) })}`;
      const renderMs: number[] = [];
      const drawMs: number[] = [];
      for (let i = 0; i < warmup + runs; i += 1) {
        const t0 = performance.now();
        await page.goto(url, { waitUntil: 'commit' });
        await ready(page);
        const elapsed = performance.now() - t0;
        const rows = await page.locator('#results-table tbody tr').count();
        const total = Number(((await page.locator('#headline-total').textContent()) ?? '').replace(/,/g, ''));
        if (rows !== SERIES || total !== events.length)
          throw new Error(`the page shows ${rows} series totalling ${total}, not ${SERIES} totalling ${events.length}`);
        const draw = Number(await page.locator('#chart').getAttribute('data-draw-ms'));
        if (!Number.isFinite(draw) || draw <= 0) throw new Error('the chart reported no draw time');
        if (i < warmup) continue;
        renderMs.push(elapsed);
        drawMs.push(draw);
      }
      await context.close();

      console.log(
        table(
          ['metric', 'median', 'p90', 'max', 'target'],
          [
            [
              'Trends first render, warm cache (ms)',
              fixed(median(renderMs)),
              fixed(percentile(renderMs, 90)),
              fixed(Math.max(...renderMs)),
              `<= ${RENDER_TARGET_MS}`,
            ],
            [
              `${SERIES}-series × ${DAYS}-day chart draw (ms)`,
              fixed(median(drawMs)),
              fixed(percentile(drawMs, 90)),
              fixed(Math.max(...drawMs)),
              `<= ${DRAW_TARGET_MS}`,
            ],
          ],
        ),
      );
      console.log(`(${runs} measured loads after ${warmup} warm-up loads, Chromium at 1280 × 900)`);
      const row = (metric: string, values: number[], target: number): SummaryRow => ({
        benchmark: 'console',
        metric,
        value: `${fixed(median(values))} ms`,
        target: `<= ${target} ms`,
        status: median(values) <= target ? 'pass' : 'OVER TARGET',
      });
      return {
        rows: [
          row('Trends first render, warm cache (median)', renderMs, RENDER_TARGET_MS),
          row(`${SERIES}-series × ${DAYS}-day chart draw (median)`, drawMs, DRAW_TARGET_MS),
        ],
        errors: [],
      };
    } finally {
      await browser.close();
      await stack.stop();
    }
  },
};
