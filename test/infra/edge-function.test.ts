import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';

// The file the stack deploys (stack.test.ts checks that); no CDK import, so this file loads fast.
const EDGE_FUNCTION_FILE = fileURLToPath(new URL('../../infra/edge/strip-trailing-slash.js', import.meta.url));

interface CfRequest {
  method: string;
  uri: string;
  querystring: Record<string, { value: string; multiValue?: { value: string }[] }>;
  headers: Record<string, { value: string }>;
  cookies: Record<string, { value: string }>;
}

// Evaluated as a classic script, the way CloudFront loads it: an import/export would fail here too.
const handler = new vm.Script(`${readFileSync(EDGE_FUNCTION_FILE, 'utf8')}\n;handler`, {
  filename: EDGE_FUNCTION_FILE,
}).runInNewContext({}) as (event: unknown) => CfRequest;

function viewerRequest(uri: string, extra: Partial<CfRequest> = {}): CfRequest {
  const request: CfRequest = {
    method: 'GET',
    uri,
    querystring: {},
    headers: { host: { value: 'api.example.com' } },
    cookies: {},
    ...extra,
  };
  return handler({
    version: '1.0',
    context: {
      distributionDomainName: 'd111111abcdef8.cloudfront.net',
      distributionId: 'EDFDVBD6EXAMPLE',
      eventType: 'viewer-request',
      requestId: 'r1',
    },
    viewer: { ip: '198.51.100.1' },
    request,
  });
}

describe('CloudFront viewer-request function', () => {
  it('strips the trailing slash so /path/ reaches the /path route', () => {
    expect(viewerRequest('/api/organizations/').uri).toBe('/api/organizations');
    expect(viewerRequest('/api/organizations/01a1b2c3-0000-7000-8000-000000000001/').uri).toBe(
      '/api/organizations/01a1b2c3-0000-7000-8000-000000000001',
    );
  });

  it('strips only one slash', () => {
    expect(viewerRequest('/api/organizations//').uri).toBe('/api/organizations/');
  });

  it('leaves paths without a trailing slash, and the root, unchanged', () => {
    expect(viewerRequest('/api/organizations').uri).toBe('/api/organizations');
    expect(viewerRequest('/api/organizations/01a1b2c3-0000-7000-8000-000000000001').uri).toBe(
      '/api/organizations/01a1b2c3-0000-7000-8000-000000000001',
    );
    expect(viewerRequest('/').uri).toBe('/');
  });

  it('leaves the query string and method untouched', () => {
    const querystring = {
      limit: { value: '10' },
      offset: { value: '20', multiValue: [{ value: '5' }, { value: '20' }] },
    };
    const out = viewerRequest('/api/organizations/', { method: 'POST', querystring: structuredClone(querystring) });
    expect(out.querystring).toEqual(querystring);
    expect(out.method).toBe('POST');
  });

  it('passes the viewer host on as x-forwarded-host, overriding one the client sent', () => {
    expect(viewerRequest('/api/organizations').headers['x-forwarded-host']).toEqual({ value: 'api.example.com' });
    const spoofed = viewerRequest('/api/organizations', {
      headers: { host: { value: 'api.example.com' }, 'x-forwarded-host': { value: 'evil.example' } },
    });
    expect(spoofed.headers['x-forwarded-host']).toEqual({ value: 'api.example.com' });
    expect(spoofed.headers.host).toEqual({ value: 'api.example.com' });
  });
});
