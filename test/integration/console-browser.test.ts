/**
 * The web console in a real Chromium against the local stack, with captured data: sign in by pasting
 * the key, build a trend with a breakdown and read the rendered table against the API's own answer,
 * show hostile names as text only, and pass axe-core. Screenshots at 1280 and 375 px go to
 * console-screenshots/ (gitignored). Chromium comes as in browser-sdk.test.ts (ensureChromium).
 *
 * Built to pass on a loaded two-core machine: one browser for the file, every step waits on the app's
 * own signal (`#app[data-state]`, set when the newest render has drawn its page) or on an element,
 * never on time; Playwright's waits and each test's own limit are minutes, not seconds.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runScheduler } from '#shared/domain/export-runs.ts';
import { ensureChromium } from '../../infra/local/chromium.ts';
import { eventually, newProject, useApi } from '../support/api.ts';
import { exclusively } from '../support/isolation.ts';
import {
  axeViolations,
  type ConsoleTab,
  DESKTOP_CHROME_UA,
  signedIn as openSignedIn,
  ready,
  STEP_TIMEOUT,
  TEST_TIMEOUT,
} from '../support/console-browser.ts';

const api = useApi();
const SHOTS = join(process.cwd(), 'console-screenshots');

/** Names that would run if any value reached the page as HTML, a URL or a template. */
const HOSTILE_EVENT = '<img src=x onerror="window.__xss=1">';
const HOSTILE_NAME = '<img src=x onerror="window.__xss=2">';
const HOSTILE_URL = 'javascript:window.__xss=3';
const HOSTILE_TEMPLATE = '{{constructor.constructor("window.__xss=4")()}}';

/** The trend the test builds in the console, as the API is asked for it. */
const TREND_QUERY = {
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: '$pageview', name: '$pageview', math: 'total' }],
  dateRange: { date_from: '-14d' },
  interval: 'day',
  breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
  trendsFilter: { display: 'ActionsLineGraph' },
};
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
        event: '$groupidentify',
        distinct_id: '$company_acme',
        timestamp: daysAgo(1),
        properties: { $group_type: 'company', $group_key: 'acme', $group_set: { name: HOSTILE_NAME } },
      },
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
      const groups = await api.as(ctx.key).get(`/api/environments/${ctx.projectId}/groups/?group_type_index=0`);
      expect(groups.body.results?.length).toBe(1);
    }, STEP_TIMEOUT);
    await mkdir(SHOTS, { recursive: true });
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
  });

  /** The page of the test that is running: on a failure its text and problems are printed, then it is closed. */
  let current: ConsoleTab | undefined;
  afterEach(async ({ task }) => {
    if (current && task.result?.state === 'fail') {
      const shown = await current.page
        .locator('body')
        .textContent()
        .catch(() => '(page closed)');
      console.error(
        `${task.name}: the page said\n${(shown ?? '').slice(-1500)}\nproblems: ${current.problems.join('\n')}`,
      );
    }
    await current?.page
      .context()
      .close()
      .catch(() => {});
    current = undefined;
  });

  async function signedIn(width: number): Promise<ConsoleTab> {
    await current?.page.context().close();
    current = await openSignedIn(browser!, api.baseUrl, ctx.key, width);
    return current;
  }

  it(
    'builds a trend with a breakdown whose table equals the API answer, at 1280 and 375 px, accessibly',
    async () => {
      for (const width of [1280, 375]) {
        const { page, problems } = await signedIn(width);
        expect(await page.evaluate('sessionStorage.length')).toBe(1);
        expect(await page.evaluate('localStorage.length')).toBe(0);
        await page.getByLabel('Series A: event').fill('$pageview');
        // The field offers the project's event names (event_definitions).
        await page.locator('#event-names option[value="$pageview"]').waitFor({ state: 'attached' });
        await page.getByLabel('Breakdown by event property').fill('$browser');
        // The breakdown field offers the keys captured on the series' event (property_definitions).
        await page.locator('#property-keys option[value="$browser"]').waitFor({ state: 'attached' });
        await page.getByLabel('Date range').selectOption('-14d');
        await page.getByRole('button', { name: 'Show trend' }).click();
        // The default trend shown on arrival is replaced by the submitted one: wait for its breakdown rows.
        await page.waitForURL(/[?&]q=/);
        await ready(page);
        await page.locator('#results-table tbody tr', { hasText: '$pageview · Chrome' }).waitFor();
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
          query: TREND_QUERY,
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
        // A click on a point lists the persons behind it (ActorsQuery over the trend), each linking to their page.
        const chrome = answer.body.results.find((r: any) => r.breakdown_value === 'Chrome');
        const day = chrome.data.findIndex((v: number) => v > 0);
        await page
          .locator('#results-table tbody tr', { hasText: '$pageview · Chrome' })
          .getByRole('button')
          .first()
          .click();
        await ready(page);
        await page.locator('#actors-table').waitFor();
        const actors = await api.as(ctx.key).post(`/api/environments/${ctx.projectId}/query/`, {
          query: {
            kind: 'ActorsQuery',
            source: {
              kind: 'InsightActorsQuery',
              source: TREND_QUERY,
              day: chrome.days[day],
              series: 0,
              breakdown: 'Chrome',
            },
          },
        });
        expect(actors.status, JSON.stringify(actors.body)).toBe(200);
        const listed = await page.$$eval('#actors-table tbody tr td:nth-child(2)', (cells) =>
          cells.map((c) => c.textContent),
        );
        expect(listed.sort()).toEqual(actors.body.results.map((r: any) => r[0].distinct_ids.join(', ')).sort());
        expect(listed.length).toBeGreaterThan(0);
        await page.locator('#actors-table tbody tr').first().getByRole('link').click();
        await ready(page);
        await page.locator('#person-properties').waitFor();
        if (width === 1280) {
          // A property filter from the URL: the headline equals the API's count of the filtered trend.
          const filtered = { events: ['$pageview'], date_from: '-14d', filter_key: '$browser', filter_value: 'Safari' };
          await page.goto(`${api.baseUrl}/?page=trends&q=${encodeURIComponent(JSON.stringify(filtered))}`);
          await ready(page);
          expect(await page.getByLabel('Filter: event property (optional)').inputValue()).toBe('$browser');
          const safari = await api.as(ctx.key).post(`/api/environments/${ctx.projectId}/query/`, {
            query: {
              ...TREND_QUERY,
              breakdownFilter: undefined,
              properties: [{ type: 'event', key: '$browser', operator: 'exact', value: 'Safari' }],
            },
          });
          expect(safari.status).toBe(200);
          expect(safari.body.results[0].count).toBe(4);
          expect(await page.locator('#headline-total').textContent()).toBe('4');
        }
        expect(problems).toEqual([]);
        await page.context().close();
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'shows the API detail next to the field it names',
    async () => {
      const { page } = await signedIn(1280);
      await page.getByLabel('Series A: event').fill('$pageview');
      await page.getByLabel('Formula (optional)').fill('A +* B');
      await page.getByRole('button', { name: 'Show trend' }).click();
      await page.waitForURL(/[?&]q=/);
      await ready(page);
      expect(await page.locator('#formula-error').textContent()).not.toBe('');
      await page.context().close();
    },
    TEST_TIMEOUT,
  );

  it(
    'renders hostile event names, person names, URLs and templates as text: nothing runs',
    async () => {
      for (const width of [1280, 375]) {
        const { page, problems } = await signedIn(width);
        await page.getByRole('link', { name: 'Events' }).click();
        await ready(page);
        await page.getByText(HOSTILE_EVENT, { exact: true }).waitFor();
        await page.locator('details summary').first().click();
        await page.screenshot({ path: join(SHOTS, `events-${width}.png`), fullPage: true });
        expect(await axeViolations(page)).toEqual([]);
        await page.getByRole('link', { name: 'Persons' }).click();
        await ready(page);
        await page.getByText(HOSTILE_NAME, { exact: true }).waitFor();
        await page.screenshot({ path: join(SHOTS, `persons-${width}.png`), fullPage: true });
        expect(await axeViolations(page)).toEqual([]);
        // Nothing from the data became markup or a link target.
        expect(await page.locator('img').count()).toBe(0);
        expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
        expect(await page.evaluate('window.__xss')).toBeUndefined();
        expect(problems).toEqual([]);
        await page.context().close();
      }
    },
    TEST_TIMEOUT,
  );

  /** A named page from the navigation, drawn. */
  async function open(page: Page, name: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
    await ready(page);
  }

  it(
    'project page: the token and snippet to copy; settings saved, the API detail by its field',
    async () => {
      for (const width of [1280, 375]) {
        const { page, problems } = await signedIn(width);
        await open(page, 'Project');
        expect(await page.locator('#project-token').textContent()).toBe(ctx.token);
        const code = (await page.locator('#project-snippet').textContent()) ?? '';
        expect(code).toContain(`posthog.init("${ctx.token}", { api_host: "${api.baseUrl}"`);
        expect(code).toContain(`${api.baseUrl}/static/array.js`);
        await page.screenshot({ path: join(SHOTS, `project-${width}.png`), fullPage: true });
        expect(await axeViolations(page)).toEqual([]);
        if (width === 1280) {
          await page.getByLabel('Time zone').fill('Mars/Olympus_Mons');
          await page.getByRole('button', { name: 'Save settings' }).click();
          await page.locator('#project-timezone-error', { hasText: 'not a valid time zone' }).waitFor();
          await page.getByLabel('Time zone').fill('Europe/Paris');
          await page.getByLabel('Autocapture clicks, inputs and page views').uncheck();
          // The project starts with PostHog's default filters: the new row comes after them.
          const n = (await page.locator('#project-form tbody tr').count()) + 1;
          await page.getByRole('button', { name: 'Add filter' }).click();
          await page.getByLabel(`Filter ${n}: property`, { exact: true }).fill('email');
          await page.getByLabel(`Filter ${n}: operator`, { exact: true }).selectOption('icontains');
          await page.getByLabel(`Filter ${n}: value`, { exact: true }).fill('@example.com');
          await page.getByRole('button', { name: 'Save settings' }).click();
          await page.locator('#project-saved', { hasText: 'Saved.' }).waitFor();
          const saved = (await api.as(ctx.key).get(`/api/environments/${ctx.projectId}/`)).body;
          expect(saved).toMatchObject({
            timezone: 'Europe/Paris',
            autocapture_opt_out: true,
          });
          expect(saved.test_account_filters).toContainEqual({
            key: 'email',
            operator: 'icontains',
            value: '@example.com',
            type: 'person',
          });
          // Drawn again from the API: the snippet now turns autocapture off.
          await page.reload();
          await ready(page);
          expect(await page.locator('#project-snippet').textContent()).toContain('autocapture: false');
          expect(await page.getByLabel(`Filter ${n}: property`, { exact: true }).inputValue()).toBe('email');
        }
        expect(problems).toEqual([]);
        await page.context().close();
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'batch exports: create with per-field errors, pause and unpause, backfill with progress, runs, retry',
    async () => {
      const midnight = (daysBack: number) => {
        const d = new Date(Date.now() - daysBack * 86_400_000);
        d.setUTCHours(0, 0, 0, 0);
        return d.toISOString();
      };
      const from = midnight(3);
      const to = midnight(1);
      for (const width of [1280, 375]) {
        const { page, problems } = await signedIn(width);
        await open(page, 'Batch exports');
        if (width === 1280) {
          await page.getByRole('link', { name: 'New export' }).click();
          await ready(page);
          await page.getByLabel('Name', { exact: true }).fill(HOSTILE_NAME);
          await page.getByLabel('Interval', { exact: true }).selectOption('day');
          await page.getByLabel('Bucket', { exact: true }).fill('My_Bucket');
          await page.getByLabel('Access key id').fill('AKIA_TEST');
          await page.getByLabel('Secret access key').fill('not-a-real-secret');
          await page.getByRole('button', { name: 'Create export' }).click();
          // The API's detail, next to the field its attr names.
          await page.locator('#bx-destination__config__bucket_name-error').filter({ hasText: /\S/ }).waitFor();
          await page.getByLabel('Bucket', { exact: true }).fill('console-exports');
          await page.getByRole('button', { name: 'Create export' }).click();
          await page.waitForURL(/[?&]export=/);
          await ready(page);
          expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(HOSTILE_NAME);
          const exportId = new URL(page.url()).searchParams.get('export');
          const at = `/api/organizations/${ctx.org.id}/batch_exports/${exportId}/`;

          await page.getByRole('button', { name: 'Pause', exact: true }).click();
          await ready(page);
          await page.getByRole('button', { name: 'Unpause', exact: true }).waitFor();
          expect((await api.as(ctx.key).get(at)).body.paused).toBe(true);
          expect(await page.locator('#export-health').textContent()).toBe('Paused');
          await page.getByRole('button', { name: 'Unpause', exact: true }).click();
          await ready(page);
          await page.getByRole('button', { name: 'Pause', exact: true }).waitFor();
          expect((await api.as(ctx.key).get(at)).body.paused).toBe(false);

          await page.getByLabel('Backfill from').fill('yesterday');
          await page.getByRole('button', { name: 'Start backfill' }).click();
          await page
            .locator('#bf-start_at-error, #bf-end_at-error, #bf-form-error')
            .filter({ hasText: /\S/ })
            .first()
            .waitFor();
          await page.getByLabel('Backfill from').fill(from);
          await page.getByLabel('Backfill to').fill(to);
          await page.getByRole('button', { name: 'Start backfill' }).click();
          await ready(page);
          await page.locator('#backfills-table tbody tr', { hasText: '0 / 2 runs' }).waitFor();

          // The scheduler's tick, as the deployed one would run it: the first day's upload fails. It
          // runs every organization's due runs, so it waits for the files that tick on their own.
          await exclusively('export-scheduler', () =>
            runScheduler(new Date(), async (_config, key) => {
              if (key.includes(`${from}-`)) throw new Error('destination down');
            }),
          );
          await page.getByRole('button', { name: 'Refresh' }).click();
          await ready(page);
          await page.locator('#backfills-table tbody tr', { hasText: '/ 2 runs' }).waitFor();
          const runs = (await api.as(ctx.key).get(`${at}runs/`)).body.results;
          const rendered = await page.$$eval('#runs-table tbody tr', (rows) =>
            rows.map((r) => ({
              status: r.children[0]?.textContent,
              records: Number(r.querySelector('.records')?.textContent),
            })),
          );
          expect(rendered).toHaveLength(runs.length);
          expect(rendered.map((r) => r.records)).toEqual(runs.map((r: any) => r.records_completed ?? 0));
          const failed = page.locator('#runs-table tbody tr', { hasText: 'destination down' });
          await failed.getByRole('button', { name: 'Retry' }).click();
          await ready(page);
          expect(await page.locator('#export-message').textContent()).toContain('Retry started');
        } else {
          await page.locator('#exports-table tbody tr').first().getByRole('link').click();
          await ready(page);
        }
        await page.screenshot({ path: join(SHOTS, `exports-${width}.png`), fullPage: true });
        expect(await axeViolations(page)).toEqual([]);
        expect(await page.locator('img').count()).toBe(0);
        expect(await page.evaluate('window.__xss')).toBeUndefined();
        expect(problems).toEqual([]);
        await page.context().close();
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'cohorts: a static cohort from a CSV upload, its persons linking to their pages; groups by type',
    async () => {
      const csv = join(SHOTS, 'cohort.csv');
      await writeFile(csv, 'distinct_id\nuser-0\nuser-1\n');
      const ambiguous = join(SHOTS, 'ambiguous.csv');
      await writeFile(ambiguous, 'a,b\n1,2\n');
      for (const width of [1280, 375]) {
        const { page, problems } = await signedIn(width);
        await open(page, 'Cohorts');
        if (width === 1280) {
          await page.getByLabel('Cohort name').fill('Early users');
          await page.getByLabel('CSV file').setInputFiles(ambiguous);
          await page.getByRole('button', { name: 'Create cohort' }).click();
          await ready(page);
          // A CSV without an id column: the API's detail, next to the file field it names.
          await page.locator('#cohort-csv-error').filter({ hasText: /\S/ }).waitFor();
          await page.getByLabel('CSV file').setInputFiles(csv);
          await page.getByRole('button', { name: 'Create cohort' }).click();
          await page.waitForURL(/[?&]cohort=/);
          await ready(page);
        } else {
          await page.getByRole('link', { name: 'Early users' }).click();
          await ready(page);
        }
        const cohortId = new URL(page.url()).searchParams.get('cohort');
        const members = (await api.as(ctx.key).get(`/api/environments/${ctx.projectId}/cohorts/${cohortId}/persons/`))
          .body.results;
        expect(members).toHaveLength(2);
        const shown = await page.$$eval('#cohort-persons tbody tr td:nth-child(2)', (cells) =>
          cells.map((c) => c.textContent).sort(),
        );
        expect(shown).toEqual(members.map((p: any) => p.distinct_ids.join(', ')).sort());
        await page.screenshot({ path: join(SHOTS, `cohorts-${width}.png`), fullPage: true });
        expect(await axeViolations(page)).toEqual([]);
        // A person's link opens their page.
        await page.locator('#cohort-persons tbody tr', { hasText: 'user-1' }).getByRole('link').click();
        await ready(page);
        expect(await page.locator('#person-properties').count()).toBe(1);
        expect(await page.getByText('Distinct ids: user-1').count()).toBe(1);

        await open(page, 'Groups');
        await page.locator('#groups-table tbody tr', { hasText: 'acme' }).waitFor();
        expect(await page.getByRole('navigation', { name: 'Group types' }).textContent()).toContain('company');
        await page.locator('#groups-table details summary').first().click();
        expect(await page.locator('#groups-table pre').first().textContent()).toContain(
          HOSTILE_NAME.replace(/"/g, '\\"'),
        );
        await page.screenshot({ path: join(SHOTS, `groups-${width}.png`), fullPage: true });
        expect(await axeViolations(page)).toEqual([]);
        // A group's page: its properties and the $group_set that set them, the hostile name as text.
        await page.locator('#groups-table tbody tr', { hasText: 'acme' }).getByRole('link', { name: 'acme' }).click();
        await ready(page);
        expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('acme');
        expect(await page.locator('#group-properties').textContent()).toContain(HOSTILE_NAME.replace(/"/g, '\\"'));
        const change = page.locator('#group-timeline tbody tr');
        expect(await change.count()).toBe(1);
        expect(await change.textContent()).toContain(`name = ${HOSTILE_NAME}`);
        expect(await change.textContent()).toContain('event: $groupidentify');
        expect(await axeViolations(page)).toEqual([]);
        expect(await page.locator('img').count()).toBe(0);
        expect(await page.evaluate('window.__xss')).toBeUndefined();
        expect(problems).toEqual([]);
      }
    },
    TEST_TIMEOUT,
  );
});
