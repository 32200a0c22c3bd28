import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { expectErrorShape, newProject, useApi } from '../support/api.ts';

const api = useApi();
const ORIGIN = 'http://127.0.0.1:5555';
const sdkDir = dirname(createRequire(import.meta.url).resolve('posthog-js/package.json'));
const sdkVersion = JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8')).version as string;

/** A browser-like request: raw fetch so headers and bodies are exactly what the test says. */
async function browser(
  method: string,
  path: string,
  init: { body?: string | Buffer; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${api.baseUrl}${path}`, {
    method,
    body: init.body,
    headers: { origin: ORIGIN, ...init.headers },
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* a script */
  }
  return { status: res.status, headers: res.headers, text, body };
}

describe('remote config (/array/<token>/config and config.js)', () => {
  it("answers the SDK's remote-config shape for the project, with CORS * and five minutes of caching", async () => {
    const { token } = await newProject(api.as);
    const res = await browser('GET', `/array/${token}/config`);
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    expect(res.body).toMatchObject({
      token,
      supportedCompression: ['gzip', 'gzip-js'],
      autocapture_opt_out: false,
      capturePerformance: false,
      heatmaps: false,
      sessionRecording: false,
      surveys: false,
      hasFeatureFlags: false,
      defaultIdentifiedOnly: true,
      analytics: { endpoint: '/i/v0/e/' },
      elementsChainAsString: true,
      siteApps: [],
    });
  });

  it('hands the same config to the SDK from config.js the way posthog-js reads it (window._POSTHOG_REMOTE_CONFIG[token].config)', async () => {
    const { token } = await newProject(api.as);
    const json = (await browser('GET', `/array/${token}/config`)).body;
    const res = await browser('GET', `/array/${token}/config.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const window: Record<string, any> = { _POSTHOG_REMOTE_CONFIG: { other: { config: {} } } };
    runInNewContext(res.text, { window });
    expect(window._POSTHOG_REMOTE_CONFIG[token]).toEqual({ config: json, siteApps: [] });
    expect(window._POSTHOG_REMOTE_CONFIG.other).toEqual({ config: {} });
  });

  it("follows the project's autocapture_opt_out setting, which the project PATCH sets and retrieve shows", async () => {
    const { key, projectId, token } = await newProject(api.as);
    expect((await api.as(key).get(`/api/environments/${projectId}`)).body.autocapture_opt_out).toBe(false);
    const patched = await api.as(key).patch(`/api/environments/${projectId}`, { autocapture_opt_out: true });
    expect(patched.status).toBe(200);
    expect(patched.body.autocapture_opt_out).toBe(true);
    expect((await browser('GET', `/array/${token}/config`)).body.autocapture_opt_out).toBe(true);
    const bad = await api.as(key).patch(`/api/environments/${projectId}`, { autocapture_opt_out: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.attr).toBe('autocapture_opt_out');
    expect((await api.as(key).get(`/api/environments/${projectId}`)).body.autocapture_opt_out).toBe(true);
  });

  it('answers 404 in the error shape, with CORS, for a token that names no project (config and config.js)', async () => {
    for (const path of ['/array/phc_nope/config', '/array/phc_nope/config.js', `/array/${'x'.repeat(300)}/config`]) {
      const res = await browser('GET', path);
      expect(res.status, path).toBe(404);
      expectErrorShape(res.body);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
  });
});

describe('feature flags (/flags, /decide)', () => {
  const noFlags = {
    flags: {},
    featureFlags: {},
    featureFlagPayloads: {},
    errorsWhileComputingFlags: false,
    quotaLimited: [],
  };

  it('answers no flags to JSON, gzip and base64-form bodies, on every path posthog-js and older SDKs call, with CORS', async () => {
    const { token } = await newProject(api.as);
    const payload = JSON.stringify({ token, distinct_id: 'flag-user', person_properties: { $lib: 'web' } });
    const bodies = [
      { body: payload, headers: { 'content-type': 'application/json' }, query: 'v=2' },
      { body: gzipSync(payload), headers: { 'content-type': 'text/plain' }, query: 'v=2&compression=gzip-js' },
      {
        body: `data=${encodeURIComponent(Buffer.from(payload).toString('base64'))}&compression=base64`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        query: 'v=3',
      },
    ];
    for (const path of ['/flags', '/flags/', '/decide', '/decide/']) {
      for (const { body, headers, query } of bodies) {
        const res = await browser('POST', `${path}?${query}`, { body, headers });
        expect([path, query, res.status]).toEqual([path, query, 200]);
        expect(res.body).toMatchObject(noFlags);
        expect(res.body.requestId).toMatch(/^[0-9a-f-]{36}$/);
        expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
        expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      }
    }
  });

  it('adds the remote config older SDKs read to /decide, and to /flags only with config=true', async () => {
    const { token } = await newProject(api.as);
    const body = JSON.stringify({ token, distinct_id: 'd' });
    const headers = { 'content-type': 'application/json' };
    const decide = (await browser('POST', '/decide/?v=4', { body, headers })).body;
    expect(decide).toMatchObject({
      ...noFlags,
      config: { enable_collect_everything: true },
      supportedCompression: ['gzip', 'gzip-js'],
      autocapture_opt_out: false,
      sessionRecording: false,
      toolbarParams: {},
      isAuthenticated: false,
      siteApps: [],
    });
    expect((await browser('POST', '/decide/?v=1', { body, headers })).body.featureFlags).toEqual([]);
    expect((await browser('POST', '/flags/?v=2', { body, headers })).body.supportedCompression).toBeUndefined();
    expect((await browser('POST', '/flags/?v=2&config=true', { body, headers })).body).toMatchObject({
      ...noFlags,
      supportedCompression: ['gzip', 'gzip-js'],
    });
  });

  it('answers 401 with CORS for a missing or unknown token and 400 for a body that is not an object', async () => {
    const headers = { 'content-type': 'application/json' };
    for (const [path, body, status] of [
      ['/flags/?v=2', JSON.stringify({ token: 'phc_unknown', distinct_id: 'd' }), 401],
      ['/decide/?v=3', JSON.stringify({ distinct_id: 'd' }), 401],
      ['/flags/?v=2', '', 401],
      ['/flags/?v=2', '[1,2]', 400],
      ['/flags/?v=2', '{not json', 400],
    ] as const) {
      const res = await browser('POST', path, { body, headers });
      expect([path, body, res.status]).toEqual([path, body, status]);
      expectErrorShape(res.body);
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    }
  });

  it('answers 413 in the error shape, with CORS, to a 2 MiB body (plain, or gzip inflating past 1 MiB), whatever its token', async () => {
    const { token } = await newProject(api.as);
    const big = JSON.stringify({ token, distinct_id: 'd', person_properties: { pad: 'x'.repeat(2 * 1024 * 1024) } });
    for (const path of ['/flags/?v=2', '/decide/?v=3']) {
      for (const [body, headers] of [
        [big, { 'content-type': 'application/json' }],
        [gzipSync(big), { 'content-type': 'text/plain' }],
      ] as const) {
        const res = await browser('POST', path, { body, headers });
        expect([path, res.status, res.body.code]).toEqual([path, 413, 'payload_too_large']);
        expectErrorShape(res.body);
        expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      }
    }
  });
});

describe('preflight', () => {
  it('answers OPTIONS on every SDK path with the CORS headers a browser needs', async () => {
    const { token } = await newProject(api.as);
    for (const path of ['/flags/', '/decide', `/array/${token}/config`, '/i/v0/e/', '/static/array.js']) {
      const res = await browser('OPTIONS', path, {
        headers: { 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      expect([path, res.status]).toEqual([path, 204]);
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(res.headers.get('access-control-allow-methods')).toContain('POST');
      expect(res.headers.get('access-control-allow-headers')).toBe('content-type');
    }
  });
});

describe("posthog-js's scripts (/static)", () => {
  it('serves the snippet bundle, the full bundle and lazily loaded extensions from the pinned package, as JavaScript with long caching', async () => {
    for (const [path, file] of [
      ['/static/array.js', 'array.js'],
      ['/static/array.full.js', 'array.full.js'],
      [`/static/surveys.js?v=${sdkVersion}`, 'surveys.js'],
      [`/static/recorder.js?v=${sdkVersion}`, 'recorder.js'],
      [`/static/${sdkVersion}/dead-clicks-autocapture.js`, 'dead-clicks-autocapture.js'],
    ]) {
      const res = await browser('GET', path!);
      expect([path, res.status]).toEqual([path, 200]);
      expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('cache-control')).toMatch(/^public, max-age=(86400|31536000, immutable)$/);
      expect(res.text === readFileSync(join(sdkDir, 'dist', file!), 'utf8'), path).toBe(true);
    }
  });

  it('refuses path traversal, other versions and files that are not browser scripts with 404 (CORS too)', async () => {
    // `..` is resolved before routing (URL parsing here, API Gateway in the cloud): it never reaches /static.
    const dotted = await rawGet('/static/../package.json');
    expect(dotted.status).toBe(404);
    expect(dotted.body).not.toContain('posthog-js');
    for (const path of [
      '/static/%2e%2e%2fpackage.json',
      '/static/..%2F..%2Fpackage.json',
      '/static/dist/array.js',
      '/static/array.js.map',
      '/static/array.d.ts',
      '/static/integrity.json',
      '/static/nope.js',
      '/static/1.0.0/array.js',
      `/static/${sdkVersion}/..%2Fpackage.json`,
    ]) {
      // fetch would normalise `..` away: a raw request line, as a hostile client sends it.
      const res = await rawGet(path);
      expect([path, res.status]).toEqual([path, 404]);
      expectErrorShape(JSON.parse(res.body));
      expect(res.headers['access-control-allow-origin'], path).toBe('*');
    }
  });
});

async function rawGet(path: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { request } = await import('node:http');
  const url = new URL(api.baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path, method: 'GET', headers: { origin: ORIGIN } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}
