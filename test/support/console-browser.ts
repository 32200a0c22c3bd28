/**
 * Driving the web console in Chromium (playwright-core) for a test: a signed-in tab, the app's own
 * "drawn" signal (`#app[data-state]`), and axe-core in the page. Every wait is on that signal or on
 * an element, never on time; limits are minutes, for a loaded two-core machine.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';

export const DESKTOP_CHROME_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
/** Generous: a step that waits this long on an idle machine has failed, on a loaded one it is slow. */
export const STEP_TIMEOUT = 120_000;
export const TEST_TIMEOUT = 900_000;

/** Waits for the console's newest render to finish; a failed one fails the step with what the page says. */
export async function ready(page: Page): Promise<void> {
  // A locator, not a page function: the console's CSP forbids the eval a string predicate needs.
  const app = page.locator('#app[data-state="ready"], #app[data-state="failed"]');
  await app.waitFor();
  const state = await app.getAttribute('data-state');
  if (state !== 'ready')
    throw new Error(`the console failed: ${((await page.locator('body').textContent()) ?? '').slice(-700)}`);
}

export interface ConsoleTab {
  page: Page;
  /** Page errors, console errors, requests that left the origin or carried the key: a test expects none. */
  problems: string[];
}

/** A fresh tab of `width` px, signed in by pasting `key`, on the console's first page. */
export async function signedIn(browser: Browser, baseUrl: string, key: string, width: number): Promise<ConsoleTab> {
  const context = await browser.newContext({ userAgent: DESKTOP_CHROME_UA, viewport: { width, height: 900 } });
  context.setDefaultTimeout(STEP_TIMEOUT);
  context.setDefaultNavigationTimeout(STEP_TIMEOUT);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // A 4xx the console shows as an error message is expected; Chromium still logs the response.
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(baseUrl)) problems.push(`left the origin: ${r.url()}`);
    if (r.url().includes(key)) problems.push(`key in a URL: ${r.url()}`);
  });
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('Personal API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await ready(page);
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return { page, problems };
}

/** axe-core's serious and critical violations on the page as drawn. */
export async function axeViolations(page: Page): Promise<string[]> {
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
