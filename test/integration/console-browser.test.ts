/**
 * The web console in a real Chromium against the local stack, with captured data: sign in by pasting
 * the key, build a trend with a breakdown and read the rendered table against the API's own answer,
 * show hostile names as text only, and pass axe-core. Screenshots at 1280 and 375 px go to
 * console-screenshots/ (gitignored). Chromium comes as in browser-sdk.test.ts (ensureChromium).
 */
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureChromium } from '../../infra/local/chromium.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

const api = useApi();
const DESKTOP_CHROME_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const SHOTS = join(process.cwd(), 'console-screenshots');

/** Names that would run if any value reached the page as HTML, a URL or a template. */
const HOSTILE_EVENT = '<img src=x onerror="window.__xss=1">';
const HOSTILE_NAME = '<img src=x onerror="window.__xss=2">';
const HOSTILE_URL = 'javascript:window.__xss=3';
const HOSTILE_TEMPLATE = '{{constructor.constructor("window.__xss=4")()}}';

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();

describe('the web console in Chromium', () => {
  let browser: Browser | undefined;
  let ctx: Awaited<ReturnType<typeof newProject>>;

  beforeAll(async () => {
    const executablePath = await ensureChromium();
    browser = await chromium.launch({ executablePath, args: [`--user-agent=${DESKTOP_CHROME_UA}`] });
    ctx = await newProject(api.as);
    const browsers = ['Chrome', 'Chrome', 'Safari', 'Firefox', HOSTILE_TEMPLATE];
    const batch = [
      ...Array.from({ length: 20 }, (_, i) => ({
        event: '$pageview',
        distinct_id: `user-${i % 4}`,
        timestamp: daysAgo(i % 6),
        properties: { $browser: browsers[i % browsers.length], $current_url: HOSTILE_URL },
      })),
      {
        event: HOSTILE_EVENT,
        distinct_id: 'user-0',
        timestamp: daysAgo(1),
        properties: { link: HOSTILE_URL, note: HOSTILE_TEMPLATE, $set: { name: HOSTILE_NAME, email: HOSTILE_URL } },
      },
    ];
    expect((await api.as().post('/batch', { api_key: ctx.token, batch })).status).toBe(200);
    await eventually(async () => {
      const persons = await api.as(ctx.key).get(`/api/environments/${ctx.projectId}/persons/`);
      expect(persons.body.results.some((p: any) => p.properties.name === HOSTILE_NAME)).toBe(true);
    }, 30_000);
    await mkdir(SHOTS, { recursive: true });
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
  });

  async function signedIn(width: number): Promise<{ page: Page; problems: string[] }> {
    const context = await browser!.newContext({ userAgent: DESKTOP_CHROME_UA, viewport: { width, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('request', (r) => {
      if (!r.url().startsWith(api.baseUrl)) problems.push(`left the origin: ${r.url()}`);
      if (r.url().includes(ctx.key)) problems.push(`key in a URL: ${r.url()}`);
    });
    await page.goto(`${api.baseUrl}/`);
    await page.getByLabel('Personal API key').fill(ctx.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    return { page, problems };
  }

  async function axeViolations(page: Page): Promise<string[]> {
    const source = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    // Evaluated through the DevTools protocol, which the page's CSP does not govern.
    await page.evaluate(source);
    const result = await page.evaluate<{ violations: { id: string; impact: string; nodes: unknown[] }[] }>(
      'axe.run(document, { resultTypes: ["violations"] })',
    );
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`);
  }

  it('builds a trend with a breakdown whose table equals the API answer, at 1280 and 375 px, accessibly', async () => {
    for (const width of [1280, 375]) {
      const { page, problems } = await signedIn(width);
      expect(await page.evaluate('sessionStorage.length')).toBe(1);
      expect(await page.evaluate('localStorage.length')).toBe(0);
      await page.getByLabel('Series A: event').fill('$pageview');
      await page.getByLabel('Breakdown by event property').fill('$browser');
      await page.getByLabel('Date range').selectOption('-14d');
      await page.getByRole('button', { name: 'Show trend' }).click();
      // The default trend shown on arrival is replaced by the submitted one: wait for its breakdown rows.
      await page.waitForURL(/[?&]q=/);
      await page
        .locator('#results-table tbody tr', { hasText: '$pageview · Chrome' })
        .waitFor({ timeout: 90_000 })
        .catch(async (e) => {
          throw new Error(`${e}\n${problems.join('\n')}\n${(await page.locator('body').innerText()).slice(-700)}`);
        });
      // The question is in the URL: reloading shows the same trend.
      const q = new URL(page.url()).searchParams.get('q');
      expect(JSON.parse(q ?? '{}')).toMatchObject({ breakdown: '$browser', date_from: '-14d' });

      const rendered = await page.$$eval('#results-table tbody tr', (rows) =>
        rows.map((r) => ({
          name: r.querySelector('th')?.textContent ?? '',
          total: Number((r.querySelector('td.total')?.textContent ?? '').replace(/,/g, '')),
        })),
      );
      const answer = await api.as(ctx.key).post(`/api/environments/${ctx.projectId}/query/`, {
        query: {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: '$pageview', name: '$pageview', math: 'total' }],
          dateRange: { date_from: '-14d' },
          interval: 'day',
          breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
          trendsFilter: { display: 'ActionsLineGraph' },
        },
      });
      expect(answer.status).toBe(200);
      const expected = answer.body.results.map((s: any) => ({
        name: `$pageview · ${s.breakdown_value}`,
        total: s.count,
      }));
      expect(rendered).toEqual(expected);
      expect(rendered.reduce((a, r) => a + r.total, 0)).toBe(20);
      expect(rendered.map((r) => r.name)).toContain(`$pageview · ${HOSTILE_TEMPLATE}`);
      expect(await page.locator('#headline-total').textContent()).toBe('20');
      expect(await page.locator('#chart canvas').count()).toBeGreaterThan(0);
      await page.screenshot({ path: join(SHOTS, `trends-${width}.png`), fullPage: true });
      expect(await axeViolations(page)).toEqual([]);
      expect(await page.evaluate('window.__xss')).toBeUndefined();
      expect(problems).toEqual([]);
      await page.context().close();
    }
  }, 400_000);

  it('shows the API detail next to the field it names', async () => {
    const { page } = await signedIn(1280);
    await page.getByLabel('Series A: event').fill('$pageview');
    await page.getByLabel('Formula (optional)').fill('A +* B');
    await page.getByRole('button', { name: 'Show trend' }).click();
    await expect.poll(() => page.locator('#formula-error').textContent(), { timeout: 90_000 }).not.toBe('');
    await page.context().close();
  }, 60_000);

  it('renders hostile event names, person names, URLs and templates as text: nothing runs', async () => {
    for (const width of [1280, 375]) {
      const { page, problems } = await signedIn(width);
      await page.getByRole('link', { name: 'Events' }).click();
      await page
        .getByText(HOSTILE_EVENT, { exact: true })
        .waitFor({ timeout: 90_000 })
        .catch(async (e) => {
          throw new Error(`${e}\n${problems.join('\n')}\n${(await page.locator('body').innerText()).slice(-700)}`);
        });
      await page.locator('details summary').first().click();
      await page.screenshot({ path: join(SHOTS, `events-${width}.png`), fullPage: true });
      expect(await axeViolations(page)).toEqual([]);
      await page.getByRole('link', { name: 'Persons' }).click();
      await page.getByText(HOSTILE_NAME, { exact: true }).waitFor({ timeout: 90_000 });
      await page.screenshot({ path: join(SHOTS, `persons-${width}.png`), fullPage: true });
      expect(await axeViolations(page)).toEqual([]);
      // Nothing from the data became markup or a link target.
      expect(await page.locator('img').count()).toBe(0);
      expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
      expect(await page.evaluate('window.__xss')).toBeUndefined();
      expect(problems).toEqual([]);
      await page.context().close();
    }
  }, 400_000);
});
