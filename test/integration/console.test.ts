/**
 * The web console served by the service itself: `/` is the page with a strict CSP, the bundle sits
 * under its content version with a year's caching, and nothing else is served from there.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useApi } from '../support/api.ts';

const api = useApi();

describe('the console is served from /', () => {
  it('serves the page with a strict CSP, no inline script, and only versioned assets', async () => {
    const page = await api.as().get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    // Every script is an external file: nothing inline for the CSP to allow.
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = /src="(\/console\/([0-9a-f]+)\/app\.js)"/.exec(page.text);
    const style = /href="(\/console\/[0-9a-f]+\/app\.css)"/.exec(page.text);
    expect(script && style).toBeTruthy();

    const js = await api.as().get(script![1]!);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^application\/javascript/);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    // The budget: all of the console's JavaScript within 150 KB gzipped (34 KB when written).
    expect(gzipSync(Buffer.from(js.text), { level: 9 }).byteLength).toBeLessThanOrEqual(150 * 1024);
    const css = await api.as().get(style![1]!);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('answers 404 for another version, an unlisted name or a path escape', async () => {
    const page = await api.as().get('/');
    const version = /\/console\/([0-9a-f]+)\//.exec(page.text)![1]!;
    for (const path of [
      '/console/0000000000000000/app.js',
      `/console/${version}/manifest.json`,
      `/console/${version}/..%2Findex.html`,
      `/console/${version}/app.js.map`,
    ]) {
      expect((await api.as().get(path)).status, path).toBe(404);
    }
  });
});
