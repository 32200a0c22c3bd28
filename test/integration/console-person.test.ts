/**
 * The console's actions on persons and its watch over a running backfill, in Chromium against the
 * local stack with captured data, each checked against the API: a person's properties timeline and
 * activity as the API lists them; delete (with the `delete_events` choice) and split, each confirmed
 * in a dialog first, keyboard-only and at 375 px; a stale page shows the API's detail; a backfill's
 * progress updated in place until it settles, and no request once the page is left. Time in the page
 * is Playwright's clock where the test is about waiting: no test waits on real time.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runScheduler } from '#shared/domain/export-runs.ts';
import { ensureChromium } from '../../infra/local/chromium.ts';
import { eventually, newKey, newProject, useApi } from '../support/api.ts';
import {
  axeViolations,
  type ConsoleTab,
  DESKTOP_CHROME_UA,
  ready,
  STEP_TIMEOUT,
  signedIn,
  TEST_TIMEOUT,
} from '../support/console-browser.ts';
import { exclusiveFile, ownDeletionQueues } from '../support/isolation.ts';

// The scheduler's tick runs every organization's due runs; the delete with its events queues requests.
exclusiveFile('export-scheduler');
ownDeletionQueues('console-person');
const api = useApi();

const SHOTS = join(process.cwd(), 'console-screenshots');
const HOSTILE_NAME = '<img src=x onerror="window.__xss=1">';
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();

describe('the console: person actions and backfill progress in Chromium', () => {
  let browser: Browser | undefined;
  let ctx: Awaited<ReturnType<typeof newProject>>;
  let persons: string;
  let current: ConsoleTab | undefined;

  const byDistinctId = async (distinctId: string) => {
    const res = await api.as(ctx.key).get(`${persons}?distinct_id=${encodeURIComponent(distinctId)}`);
    expect(res.status).toBe(200);
    return res.body.results as any[];
  };
  const personOf = (distinctId: string) =>
    eventually(async () => {
      const found = await byDistinctId(distinctId);
      expect(found).toHaveLength(1);
      return found[0];
    }, STEP_TIMEOUT);

  beforeAll(async () => {
    const executablePath = await ensureChromium();
    browser = await chromium.launch({ executablePath, args: [`--user-agent=${DESKTOP_CHROME_UA}`] });
    ctx = await newProject(api.as);
    persons = `/api/environments/${ctx.projectId}/persons/`;
    const merged = (anon: string, user: string) => [
      { event: '$pageview', distinct_id: anon, timestamp: daysAgo(3) },
      {
        event: '$identify',
        distinct_id: user,
        timestamp: daysAgo(2),
        properties: { $anon_distinct_id: anon, $set: { email: `${user}@example.com` } },
      },
    ];
    const batch = [
      ...merged('anon-s', 'user-s'),
      ...merged('anon-b', 'user-b'),
      { event: 'signed up', distinct_id: 'del-1', timestamp: daysAgo(3), properties: { $set: { name: HOSTILE_NAME } } },
      { event: 'upgraded', distinct_id: 'del-1', timestamp: daysAgo(2), properties: { $set: { plan: 'pro' } } },
    ];
    expect((await api.as().post('/batch', { api_key: ctx.token, batch })).status).toBe(200);
    await eventually(async () => {
      expect((await personOf('user-s')).distinct_ids).toHaveLength(2);
      expect((await personOf('user-b')).distinct_ids).toHaveLength(2);
      expect((await personOf('del-1')).properties).toMatchObject({ name: HOSTILE_NAME, plan: 'pro' });
    }, STEP_TIMEOUT);
    // An edit through the API: an activity entry and a timeline point of source `api`.
    const d = await personOf('del-1');
    expect((await api.as(ctx.key).patch(`${persons}${d.id}/`, { properties: { seats: 3 } })).status).toBe(200);
    await mkdir(SHOTS, { recursive: true });
  }, TEST_TIMEOUT);

  afterAll(async () => {
    await browser?.close();
  });

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

  async function tab(width: number): Promise<ConsoleTab> {
    current = await signedIn(browser!, api.baseUrl, ctx.key, width);
    return current;
  }

  async function openPerson(page: Page, id: number | string): Promise<void> {
    await page.goto(
      `${api.baseUrl}/?${new URLSearchParams({ page: 'persons', project: String(ctx.projectId), person: String(id) })}`,
    );
    await ready(page);
  }

  const focusedText = (page: Page) => page.evaluate('document.activeElement?.textContent');

  it(
    "a person's page at 375 px: timeline and activity rows as the API lists them; delete confirmed by keyboard, Escape cancels",
    async () => {
      const { page, problems } = await tab(375);
      const d = await personOf('del-1');
      await openPerson(page, d.id);

      const timeline = (await api.as(ctx.key).get(`${persons}${d.id}/properties_timeline/`)).body.points;
      expect(timeline.length).toBeGreaterThanOrEqual(3);
      expect(timeline.map((p: any) => p.source)).toContain('api');
      const timelineRows = await page.$$eval('#person-timeline tbody tr', (rows) =>
        rows.map((r) => [...r.querySelectorAll('td')].map((c) => c.textContent)),
      );
      expect(timelineRows).toEqual(
        timeline.map((p: any) => [
          p.timestamp,
          p.event ? `${p.source}: ${p.event}` : p.source,
          p.changed_keys
            .map((k: string) => (k in p.properties ? `${k} = ${String(p.properties[k])}` : `${k} removed`))
            .join(''),
        ]),
      );
      // The hostile name is a value in the timeline, shown as text.
      expect(timelineRows.flat().join(' ')).toContain(`name = ${HOSTILE_NAME}`);

      const activity = (await api.as(ctx.key).get(`${persons}${d.id}/activity/`)).body.results;
      const activityRows = await page.$$eval('#person-activity tbody tr', (rows) =>
        rows.map((r) => [...r.querySelectorAll('td')].slice(0, 3).map((c) => c.textContent)),
      );
      expect(activityRows).toEqual(activity.map((a: any) => [a.created_at, a.activity, a.user.email]));
      expect(activityRows.map((r) => r[1])).toEqual(['updated']);

      // Keyboard only: the button opens the dialog with focus on Cancel; Escape closes it and focus returns.
      const open = page.getByRole('button', { name: /^Delete person/ });
      await open.focus();
      await page.keyboard.press('Enter');
      await page.locator('#delete-person[open]').waitFor();
      expect(await focusedText(page)).toBe('Cancel');
      const box = await page.locator('#delete-person').boundingBox();
      expect(box!.x).toBeGreaterThanOrEqual(0);
      expect(box!.x + box!.width).toBeLessThanOrEqual(375);
      expect(await page.getByLabel(/Also delete all of their events/).isVisible()).toBe(true);
      await page.screenshot({ path: join(SHOTS, 'person-delete-375.png') });
      expect(await axeViolations(page)).toEqual([]);
      await page.keyboard.press('Escape');
      await page.locator('#delete-person:not([open])').waitFor({ state: 'attached' });
      expect(await focusedText(page)).toMatch(/^Delete person/);
      expect((await api.as(ctx.key).get(`${persons}${d.id}/`)).status).toBe(200);
      expect(await page.locator('img').count()).toBe(0);
      expect(await page.evaluate('window.__xss')).toBeUndefined();
      expect(problems).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'a key without activity_log:read sees the person page and, where the activity would be, the API saying why',
    async () => {
      const scoped = await newKey({ email: ctx.email, scopes: ['organization:read', 'person:read', 'query:read'] });
      current = await signedIn(browser!, api.baseUrl, scoped.key, 1280);
      const { page, problems } = current;
      const s = await personOf('user-s');
      await openPerson(page, s.id);
      const refused = await api.as(scoped.key).get(`${persons}${s.id}/activity/`);
      expect(refused.status).toBe(403);
      expect(await page.locator('#person-activity-error').textContent()).toBe(refused.body.detail);
      await page.locator('#person-timeline tbody tr').first().waitFor();
      expect(problems).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'deletes a person with its events after confirmation: the API no longer has it, the list says so',
    async () => {
      const { page, problems } = await tab(1280);
      const d = await personOf('del-1');
      await openPerson(page, d.id);
      await page.getByRole('button', { name: /^Delete person/ }).click();
      await page.getByLabel(/Also delete all of their events/).check();
      const sent = page.waitForRequest((r) => r.method() === 'DELETE');
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      expect(new URL((await sent).url()).searchParams.get('delete_events')).toBe('true');
      await page.waitForURL((url) => !url.searchParams.has('person'));
      await ready(page);
      expect(await page.locator('#persons-message').textContent()).toContain('deleted');
      expect((await api.as(ctx.key).get(`${persons}${d.id}/`)).status).toBe(404);
      expect(await byDistinctId('del-1')).toEqual([]);
      expect(problems).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'splits a person after confirmation into two persons, the chosen id keeping it; a stale page shows the API detail',
    async () => {
      const { page, problems } = await tab(1280);
      const s = await personOf('user-s');
      await openPerson(page, s.id);
      await page.getByRole('button', { name: /^Split person/ }).click();
      await page.getByLabel('Distinct id that keeps this person and its properties').selectOption('user-s');
      await page.getByRole('button', { name: 'Split', exact: true }).click();
      await ready(page);
      await page.locator('#person-message', { hasText: 'Split into 2 persons.' }).waitFor();
      const [main] = await byDistinctId('user-s');
      const [other] = await byDistinctId('anon-s');
      expect(main).toMatchObject({ id: s.id, distinct_ids: ['user-s'], properties: { email: 'user-s@example.com' } });
      expect(other.id).not.toBe(s.id);
      expect(other.distinct_ids).toEqual(['anon-s']);
      // Drawn again from the API: one distinct id left, and the split in the activity.
      expect(await page.getByText('Distinct ids: user-s', { exact: true }).count()).toBe(1);
      expect(await page.locator('#person-activity tbody tr').first().textContent()).toContain('split_person');
      await page.screenshot({ path: join(SHOTS, 'person-1280.png'), fullPage: true });
      expect(await axeViolations(page)).toEqual([]);

      // Split through the API behind the page's back: the page's choice is no longer this person's id.
      const b = await personOf('user-b');
      await openPerson(page, b.id);
      expect((await api.as(ctx.key).post(`${persons}${b.id}/split/`, { main_distinct_id: 'user-b' })).status).toBe(200);
      await page.getByRole('button', { name: /^Split person/ }).click();
      await page.getByLabel('Distinct id that keeps this person and its properties').selectOption('anon-b');
      await page.getByRole('button', { name: 'Split', exact: true }).click();
      await ready(page);
      const refused = await api.as(ctx.key).post(`${persons}${b.id}/split/`, { main_distinct_id: 'anon-b' });
      expect(refused.status).toBe(400);
      await page.locator('#split-person-error').filter({ hasText: /\S/ }).waitFor();
      expect(await page.locator('#split-person-error').textContent()).toBe(refused.body.detail);
      expect(await page.locator('#split-person[open]').count()).toBe(1);
      expect(problems).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    "batch exports: a running backfill's progress updates on its own until it settles; no request once the page is left",
    async () => {
      const midnight = (back: number) => {
        const d = new Date(Date.now() - back * 86_400_000);
        d.setUTCHours(0, 0, 0, 0);
        return d.toISOString();
      };
      const c = api.as(ctx.key);
      const base = `/api/organizations/${ctx.org.id}/batch_exports/`;
      const created = await c.post(base, {
        name: 'Watched backfills',
        interval: 'day',
        destination: {
          type: 'S3',
          config: {
            bucket_name: 'console-exports',
            region: 'us-east-1',
            prefix: 'watched',
            aws_access_key_id: 'AKIA_TEST',
            aws_secret_access_key: 'not-a-real-secret',
          },
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const at = `${base}${created.body.id}/`;
      const backfill = async (from: number, to: number) => {
        const res = await c.post(`${at}backfills/`, { start_at: midnight(from), end_at: midnight(to) });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return res.body.backfill_id as string;
      };
      const first = await backfill(3, 1);

      const { page, problems } = await tab(1280);
      const polls = new Map<string, number>();
      page.on('request', (r) => {
        const m = /\/backfills\/([^/?]+)\/$/.exec(new URL(r.url()).pathname);
        if (m?.[1] && r.method() === 'GET') polls.set(m[1], (polls.get(m[1]) ?? 0) + 1);
      });
      // The page's timers run only when the test says: time passes in the page, not in the test.
      const now = Date.now();
      await page.clock.install({ time: now });
      await page.clock.pauseAt(now + 1000);
      await page.goto(
        `${api.baseUrl}/?${new URLSearchParams({ page: 'exports', project: String(ctx.projectId), export: created.body.id })}`,
      );
      await ready(page);
      const row = (id: string) =>
        page.locator('#backfills-table tbody tr', { has: page.getByLabel(`Backfill ${id} progress`) });
      await row(first).filter({ hasText: '0 / 2 runs' }).waitFor();

      // The scheduler's ticks, as the deployed one would run them, until both days are exported.
      const settled = await eventually(async () => {
        await runScheduler(new Date(), async () => {});
        const b = (await c.get(`${at}backfills/${first}/`)).body;
        expect(b.status).not.toMatch(/^(Starting|Running)$/);
        return b;
      }, STEP_TIMEOUT);
      expect(settled.progress).toMatchObject({ total_runs: 2, finished_runs: 2 });
      expect(polls.get(first) ?? 0).toBe(0);
      // A second later in the page: the row shows it, without a click or a redraw of the page.
      await page.clock.runFor(1000);
      await row(first).filter({ hasText: '2 / 2 runs' }).waitFor();
      expect(await row(first).locator('.badge').textContent()).toBe(settled.status);
      expect(await page.locator('#export-message').textContent()).toContain(`Backfill ${settled.status.toLowerCase()}`);
      expect(polls.get(first)).toBe(1);
      // Settled: half an hour later in the page it has not been asked for again.
      await page.clock.runFor(30 * 60_000);

      // A second backfill (other days), still waiting for the scheduler: watched until the page is left.
      const second = await backfill(6, 4);
      await page.getByRole('button', { name: 'Refresh' }).click();
      await ready(page);
      await row(second).filter({ hasText: '0 / 2 runs' }).waitFor();
      const asked = page.waitForResponse((r) => r.url().endsWith(`/backfills/${second}/`));
      await page.clock.runFor(1000);
      await asked;
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Persons' }).click();
      await ready(page);
      await page.clock.runFor(30 * 60_000);
      // Any request those timers made was sent before this navigation's own.
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Batch exports' }).click();
      await ready(page);
      expect(polls.get(second)).toBe(1);
      expect(polls.get(first)).toBe(1);
      expect(problems).toEqual([]);
      await c.delete(at);
    },
    TEST_TIMEOUT,
  );
});
