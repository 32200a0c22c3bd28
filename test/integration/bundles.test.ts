import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildFunctions, ROOT } from '#infra/build.ts';
import {
  BUNDLE_BUDGET_KB,
  type BundleSize,
  breakdownLines,
  bundleSizes,
  ceilingOf,
  kb,
  OVER_BUDGET_CEILINGS_KB,
} from '#infra/bundle-sizes.ts';
import { lambdaContext } from '../../infra/local/lambda-context.ts';
import { newKey } from '../support/api.ts';
import { httpApiEvent } from '../support/lambda-event.ts';

/**
 * The functions that carry the SDK's S3 client: those that reach an export destination (with STS),
 * and those whose lake store still writes its bucket through the export writer.
 */
const S3_CLIENT_FUNCTIONS = [
  'batch_exports_test',
  'compact_events',
  'insights_trend',
  'insights_trend_retrieve',
  'query_create',
  'run_batch_exports',
  'run_queries',
];

let outdir: string;
let metafile: Metafile;

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), 'analytics-bundles-'));
  metafile = await buildFunctions(outdir);
}, 180_000);

async function bundled(name: string) {
  return (
    (await import(pathToFileURL(join(outdir, name, 'index.mjs')).href)) as {
      handler: (e: unknown, c: unknown) => Promise<any>;
    }
  ).handler;
}

describe('the deployable bundles', () => {
  it('run as built (ESM, credentials from the environment) against the table', async () => {
    // What Lambda provides: role credentials in the environment (here DynamoDB Local's dummy ones).
    expect(process.env.AWS_ACCESS_KEY_ID).toBeTruthy();
    const { key } = await newKey();
    const create = await bundled('organizations_create');
    const created = await create(
      { ...httpApiEvent('POST', '/api/organizations', key, { name: 'From a bundle' }) },
      lambdaContext('organizations_create'),
    );
    expect(created.statusCode).toBe(201);
    const list = await bundled('organizations_list');
    const listed = await list(httpApiEvent('GET', '/api/organizations', key), lambdaContext('organizations_list'));
    expect(JSON.parse(listed.body)).toMatchObject({ count: 1, results: [{ name: 'From a bundle' }] });
    const projectId = JSON.parse(created.body).teams[0].id;
    const trend = await bundled('insights_trend');
    const res = await trend(
      {
        ...httpApiEvent('POST', `/api/environments/${projectId}/insights/trend`, key, { events: [{ id: 'x' }] }),
        pathParameters: { project_id: String(projectId) },
      },
      lambdaContext('insights_trend'),
    );
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body).result[0].data).toHaveLength(8);
    // SQS through the bundled client too.
    const query = await bundled('query_create');
    const started = await query(
      {
        ...httpApiEvent('POST', `/api/environments/${projectId}/query`, key, {
          query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'x' }] },
          refresh: 'force_async',
        }),
        pathParameters: { project_id: String(projectId) },
      },
      lambdaContext('query_create'),
    );
    expect(started.statusCode).toBe(202);
    expect(JSON.parse(started.body).query_status).toMatchObject({ complete: false });
  });

  it(`stay within their size budget (${BUNDLE_BUDGET_KB} KB minified, or the named ceiling of one still over it; the offenders named with what fills them)`, () => {
    const sizes = bundleSizes(metafile);
    const over = sizes.filter((b) => kb(b.bytes) > ceilingOf(b.name));
    expect(over.map((b) => breakdownLines(b, 8).join('\n'))).toEqual([]);
    // A ceiling is for a function still over the budget: once under it, the ceiling goes.
    const needless = Object.keys(OVER_BUDGET_CEILINGS_KB).filter(
      (name) => kb(sizes.find((b) => b.name === name)?.bytes ?? 0) <= BUNDLE_BUDGET_KB,
    );
    expect(needless).toEqual([]);
  });

  it("carry their own route rows, not the whole table, and none of the SDK's event-stream codecs", () => {
    const sizes = bundleSizes(metafile);
    const holding = (part: string) =>
      sizes.filter((b) => Object.keys(b.inputs).some((input) => input.includes(part))).map((b) => b.name);
    // The fallback matches every path against the table; every other function knows its own rows only.
    expect(holding('functions/routes.ts')).toEqual(['fallback']);
    // The S3 client brings its codec (SelectObjectContent) wherever it goes; no other function carries one.
    expect(
      holding('@smithy/core/dist-es/submodules/event-streams').filter((n) => !S3_CLIENT_FUNCTIONS.includes(n)),
    ).toEqual([]);
  });

  it('carry none of the AWS SDK but the S3 and STS clients of export destinations: DynamoDB, SQS and KMS are spoken by shared/aws', () => {
    const sizes = bundleSizes(metafile);
    const sdkInputs = (b: BundleSize) =>
      Object.keys(b.inputs).filter(
        (input) => /@(aws-sdk|smithy)\//.test(input) && !input.includes('@aws-sdk/util-dynamodb/'),
      );
    // The SDK only where a destination (or the lake store, through the export writer) is written.
    expect(
      sizes
        .filter((b) => sdkInputs(b).length > 0)
        .map((b) => b.name)
        .sort(),
    ).toEqual(S3_CLIENT_FUNCTIONS);
    const otherClients = sizes.flatMap((b) =>
      sdkInputs(b)
        .filter((input) => /@aws-sdk\/(client-(?!s3\/|sts\/)|lib-)/.test(input))
        .map((input) => `${b.name}: ${input.replace(/.*node_modules\//, '')}`),
    );
    expect(otherClients.slice(0, 10)).toEqual([]);
    // Not vacuous: the exporter carries both clients, and the table's client is in the bundles.
    const exporter = sizes.find((b) => b.name === 'run_batch_exports')!;
    for (const client of ['@aws-sdk/client-s3/', '@aws-sdk/client-sts/'])
      expect(
        sdkInputs(exporter).some((input) => input.includes(client)),
        client,
      ).toBe(true);
    expect(
      sizes.filter((b) => Object.keys(b.inputs).some((input) => input.endsWith('shared/aws/dynamodb.ts'))).length,
    ).toBeGreaterThan(50);
  });

  it('leave the filter grammar, its regex engine and HogQL out of the functions that never evaluate them', () => {
    // Reads of a project, actions listed or deleted, an export paused, the API's description: none parses a
    // filter or an expression, so none should carry the code (and its cold start) that does.
    const light = [
      'projects_retrieve',
      'actions_list',
      'actions_retrieve',
      'actions_destroy',
      'batch_exports_pause',
      'batch_exports_unpause',
      'schema',
    ];
    const heavy = ['re2js', 'shared/regex.ts', 'shared/hogql/', 'shared/trends/properties.ts'];
    const sizes = bundleSizes(metafile);
    const found = light.flatMap((name) => {
      const bundle = sizes.find((b) => b.name === name);
      if (!bundle) return [`${name}: no such bundle`];
      // An input esbuild lists with 0 bytes in the output (a re-export it followed, then shook off) is not carried.
      return Object.entries(bundle.inputs)
        .filter(([input, bytes]) => bytes > 0 && heavy.some((h) => input.includes(h)))
        .map(([input]) => input)
        .map((input) => `${name}: ${input.replace(/.*node_modules\//, '')}`);
    });
    expect(found).toEqual([]);
  });

  it("serve posthog-js's scripts from the copy beside the static bundle (the deployed function has no node_modules)", async () => {
    const sdk = dirname(createRequire(import.meta.url).resolve('posthog-js/package.json'));
    const version = JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')).version as string;
    // Outside the repository: the bundle cannot fall back to node_modules, only to its own copy.
    expect(outdir.startsWith(tmpdir())).toBe(true);
    const serve = await bundled('sdk_static');
    const res = await serve(
      { ...httpApiEvent('GET', '/static/array.js', undefined), pathParameters: { file: 'array.js' } },
      lambdaContext('sdk_static'),
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['Content-Type']).toBe('application/javascript; charset=utf-8');
    expect(res.body === readFileSync(join(sdk, 'dist', 'array.js'), 'utf8')).toBe(true);
    const versioned = await bundled('sdk_static_versioned');
    const ok = await versioned(
      {
        ...httpApiEvent('GET', `/static/${version}/surveys.js`, undefined),
        pathParameters: { version, file: 'surveys.js' },
      },
      lambdaContext('sdk_static_versioned'),
    );
    expect(ok.statusCode).toBe(200);
    const missing = await serve(
      { ...httpApiEvent('GET', '/static/x', undefined), pathParameters: { file: '../package.json' } },
      lambdaContext('sdk_static'),
    );
    expect(missing.statusCode).toBe(404);
    // The handler stays small; the scripts ride beside it, not inside it.
    expect(statSync(join(outdir, 'sdk_static', 'index.mjs')).size).toBeLessThan(400 * 1024);
  });

  it('serve the OpenAPI document from the copy beside the schema bundle, not from inside it', async () => {
    const schema = await bundled('schema');
    const res = await schema(httpApiEvent('GET', '/api/schema', undefined), lambdaContext('schema'));
    expect(res.statusCode).toBe(200);
    const committed = readFileSync(join(ROOT, 'docs', 'openapi.json'), 'utf8');
    expect(JSON.parse(res.body)).toEqual(JSON.parse(committed));
    // Out of the repository there is no docs/ to fall back on: the copy answered. The module holds no document.
    expect(existsSync(join(outdir, '..', 'docs', 'openapi.json'))).toBe(false);
    expect(committed).toContain('"x-parsed-as"');
    expect(readFileSync(join(outdir, 'schema', 'index.mjs'), 'utf8')).not.toContain('x-parsed-as');
  });
});
