/**
 * The unmodified posthog-js, loaded by PostHog's official snippet from this service's /static/array.js,
 * in a real Chromium on a page of another origin. Chromium comes from Debian: the first run installs it
 * (ensureChromium, as root or with passwordless sudo); where it cannot, this test fails with the install
 * command, never skips.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureChromium } from '../../infra/local/chromium.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

const api = useApi();

/**
 * posthog-js drops every event of a browser that looks automated (`isLikelyBot`: "headlesschrome" in
 * the user agent or its brands, or navigator.webdriver), so the page runs as a regular desktop Chrome.
 */
const DESKTOP_CHROME_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

/** PostHog's snippet as its docs give it: loads `<api_host>/static/array.js` and queues calls until it runs. */
const SNIPPET = `!function(t,e){var o,n,p,r;e.__SV||(window.posthog&&window.posthog.__loaded)||(window.posthog=e,e._i=[],e.init=function(i,s,a){function g(t,e){var o=e.split(".");2==o.length&&(t=t[o[0]],e=o[1]),t[e]=function(){t.push([e].concat(Array.prototype.slice.call(arguments,0)))}}(p=t.createElement("script")).type="text/javascript",p.crossOrigin="anonymous",p.async=!0,p.src=s.api_host.replace(".i.posthog.com","-assets.i.posthog.com")+"/static/array.js",(r=t.getElementsByTagName("script")[0]).parentNode.insertBefore(p,r);var u=e;for(void 0!==a?u=e[a]=[]:a="posthog",u.people=u.people||[],u.toString=function(t){var e="posthog";return"posthog"!==a&&(e+="."+a),t||(e+=" (stub)"),e},u.people.toString=function(){return u.toString(1)+".people (stub)"},o="init capture register register_once register_for_session unregister unregister_for_session getFeatureFlag getFeatureFlagPayload isFeatureEnabled reloadFeatureFlags updateEarlyAccessFeatureEnrollment getEarlyAccessFeatures on onFeatureFlags onSurveysLoaded onSessionId getSurveys getActiveMatchingSurveys renderSurvey canRenderSurvey canRenderSurveyAsync identify setPersonProperties group resetGroups setPersonPropertiesForFlags resetPersonPropertiesForFlags setGroupPropertiesForFlags resetGroupPropertiesForFlags reset get_distinct_id getGroups get_session_id get_session_replay_url alias set_config startSessionRecording stopSessionRecording sessionRecordingStarted captureException loadToolbar get_property getSessionProperty createPersonProfile opt_in_capturing opt_out_capturing has_opted_in_capturing has_opted_out_capturing clear_opt_in_out_capturing debug getPageViewId".split(" "),n=0;n<o.length;n++)g(u,o[n]);e._i.push([i,s,a])},e.__SV=1)}(document,window.posthog||[]);`;

function shopPage(token: string, apiHost: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Shop</title><link rel="icon" href="data:,">
<script>
${SNIPPET}
window.flagLoads = [];
posthog.init(${JSON.stringify(token)}, { api_host: ${JSON.stringify(apiHost)}, loaded: function () { window.sdkLoaded = true; } });
posthog.onFeatureFlags(function (flags, variants, context) { window.flagLoads.push(context ? context.errorsLoading : 'no context'); });
</script></head>
<body><h1>Shop</h1><button id="buy" class="cta">Buy now</button><a id="leave" href="/next">Next page</a></body></html>`;
}

/** A site on another origin than the API: the page, and a second page without the SDK to navigate to. */
async function startSite(page: () => string): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(
      req.url === '/next' ? '<!doctype html><title>Next</title><link rel="icon" href="data:,"><p>bye</p>' : page(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('posthog-js in Chromium against this service', () => {
  let browser: Browser | undefined;

  // Ten minutes: on a fresh machine this hook installs Chromium (apt-get) before launching it.
  beforeAll(async () => {
    const executablePath = await ensureChromium();
    // AutomationControlled off: navigator.webdriver stays false, as in a person's browser. The user agent
    // is set for the whole browser too: the context's override is gone by the time `pagehide` runs on
    // navigation, and posthog-js would then drop $pageleave as a bot's ("HeadlessChrome").
    browser = await chromium.launch({
      executablePath,
      args: ['--disable-blink-features=AutomationControlled', `--user-agent=${DESKTOP_CHROME_UA}`],
    });
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('captures, identifies, autocaptures a click and sends the unload beacon, with no console errors', async () => {
    const { key, projectId, token } = await newProject(api.as);
    let html = '';
    const site = await startSite(() => html);
    html = shopPage(token, api.baseUrl);
    const context = await browser!.newContext({ userAgent: DESKTOP_CHROME_UA });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('requestfailed', (r) => {
      // A capture in flight when the page navigates away is aborted (on either capture path, `/e/` too
      // when the machine is slow); posthog-js resends it in the unload beacon, and the exact counts below
      // would miss it otherwise.
      const abortedCapture =
        ['/e/', '/i/v0/e/'].some((path) => r.url().startsWith(`${api.baseUrl}${path}`)) &&
        r.failure()?.errorText === 'net::ERR_ABORTED';
      if (!abortedCapture) problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`);
    });
    const apiAnswers: { url: string; status: number }[] = [];
    const gzipCaptures: boolean[] = [];
    page.on('request', (r) => {
      const body = r.postDataBuffer();
      if (r.url().startsWith(`${api.baseUrl}/i/v0/e/`) && body) gzipCaptures.push(body[0] === 0x1f && body[1] === 0x8b);
    });
    page.on('response', (r) => {
      if (r.url().startsWith(api.baseUrl))
        apiAnswers.push({ url: r.url().slice(api.baseUrl.length), status: r.status() });
    });

    try {
      const configScript = page.waitForResponse((r) => r.url() === `${api.baseUrl}/array/${token}/config.js`);
      await page.goto(`${site.origin}/`);
      expect((await configScript).status()).toBe(200);
      await page.waitForFunction('window.sdkLoaded === true');
      // Autocapture starts once remote config said autocapture_opt_out: false (with a body to listen on).
      await page.waitForFunction('window.posthog.autocapture?.isEnabled === true');
      const anonymousId = await page.evaluate<string>('posthog.get_distinct_id()');

      await page.evaluate("posthog.capture('clicked buy', { plan: 'pro' })");
      await page.evaluate("posthog.identify('user-42', { email: 'ada@example.com', name: 'Ada' })");
      await page.click('#buy');
      // identify reloads flags: /flags answers "none", and callbacks hear no error.
      await page.waitForFunction('window.flagLoads.includes(false)');
      expect(await page.evaluate('window.flagLoads')).not.toContain(true);
      // Leaving the page flushes the queue and sends $pageleave with sendBeacon.
      await page.click('#leave');
      await page.waitForURL(`${site.origin}/next`);

      await eventually(async () => {
        const events = [
          { id: '$pageview' },
          { id: '$autocapture' },
          { id: 'clicked buy' },
          { id: '$pageleave' },
          { id: '$identify' },
        ];
        const res = await api
          .as(key)
          .get(
            `/api/environments/${projectId}/insights/trend?refresh=true&date_from=-1d&events=${encodeURIComponent(JSON.stringify(events))}`,
          );
        expect(res.status).toBe(200);
        const counts = Object.fromEntries(res.body.result.map((s: any) => [s.label, s.count]));
        // Two clicks autocaptured: the button and the link that leaves the page.
        expect(counts).toEqual({ $pageview: 1, $autocapture: 2, 'clicked buy': 1, $pageleave: 1, $identify: 1 });
      }, 15_000);
      const person = await eventually(async () => {
        const res = await api.as(key).get(`/api/environments/${projectId}/persons?distinct_id=user-42`);
        expect(res.body.results).toHaveLength(1);
        expect(res.body.results[0].distinct_ids.sort()).toEqual([anonymousId, 'user-42'].sort());
        return res.body.results[0];
      }, 15_000);
      expect(person.properties).toMatchObject({ email: 'ada@example.com', name: 'Ada' });

      expect(problems).toEqual([]);
      // Every request the SDK made was answered; events went to remote config's endpoint, gzipped as it allowed.
      expect(apiAnswers.filter((a) => a.status >= 400)).toEqual([]);
      expect(gzipCaptures.length).toBeGreaterThan(0);
      expect(gzipCaptures.every(Boolean)).toBe(true);
      expect(apiAnswers.map((a) => a.url.split('?')[0])).toEqual(
        expect.arrayContaining(['/static/array.js', `/array/${token}/config.js`, '/flags/']),
      );
    } finally {
      await context.close();
      site.server.close();
    }
  }, 60_000);

  it('posthog.group(): the group appears in /groups/ and a unique_group trend counts it', async () => {
    const { key, projectId, token } = await newProject(api.as);
    let html = '';
    const site = await startSite(() => html);
    html = shopPage(token, api.baseUrl);
    const problems: string[] = [];
    // Two visitors: one at acme (two clicks), one at globex (one click).
    const visit = async (company: string, name: string, clicks: number) => {
      const context = await browser!.newContext({ userAgent: DESKTOP_CHROME_UA });
      const page = await context.newPage();
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      page.on('response', (r) => {
        if (r.url().startsWith(api.baseUrl) && r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
      });
      try {
        await page.goto(`${site.origin}/`);
        await page.waitForFunction('window.sdkLoaded === true');
        await page.evaluate(
          `posthog.group('company', ${JSON.stringify(company)}, { name: ${JSON.stringify(name)}, plan: 'pro' })`,
        );
        for (let i = 0; i < clicks; i += 1) await page.evaluate("posthog.capture('clicked buy')");
        // Leaving the page flushes the queue.
        await page.click('#leave');
        await page.waitForURL(`${site.origin}/next`);
      } finally {
        await context.close();
      }
    };
    try {
      await visit('acme', 'Acme', 2);
      await visit('globex', 'Globex', 1);
      const c = api.as(key);
      await eventually(async () => {
        const res = await c.get(`/api/projects/${projectId}/groups/?group_type_index=0`);
        expect(res.body.results.map((g: any) => [g.group_key, g.group_properties.name]).sort()).toEqual([
          ['acme', 'Acme'],
          ['globex', 'Globex'],
        ]);
      }, 15_000);
      await eventually(async () => {
        const res = await c.post(`/api/projects/${projectId}/insights/trend/`, {
          events: [{ id: 'clicked buy', math: 'unique_group', math_group_type_index: 0 }, { id: 'clicked buy' }],
          date_from: '-1d',
          display: 'BoldNumber',
          refresh: true,
        });
        expect(res.body.result.map((s: any) => s.aggregated_value)).toEqual([2, 3]);
      }, 15_000);
      expect(problems).toEqual([]);
    } finally {
      site.server.close();
    }
  }, 90_000);
});
