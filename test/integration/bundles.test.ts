import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildFunctions, functionEntries, ROOT } from '#infra/build.ts';
import { bundleSizes } from '#infra/bundle-sizes.ts';
import { coldImportMs } from '../../bench/lib/cold-import.ts';
import { lambdaContext } from '../../infra/local/lambda-context.ts';
import { newKey } from '../support/api.ts';
import { httpApiEvent } from '../support/lambda-event.ts';

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
    // Five bundles, each with its own copy of the SDK to load and initialise: minutes on a busy CI machine.
  }, 180_000);

  it('every one builds and loads on its own (a fresh node, outside the repository: no node_modules to fall back on)', async () => {
    // Bytes have no ceiling (issue 36: the SDK is paid once; `npm run bench -- bundles` reports them).
    // What must hold is that each function loads: an ESM bundle with the SDK's CommonJS build inside
    // fails here on its require() of node built-ins (infra/build.ts, mainFields).
    const names = Object.keys(functionEntries());
    expect(
      bundleSizes(metafile)
        .map((b) => b.name)
        .sort(),
    ).toEqual([...names].sort());
    const failed: string[] = [];
    const lanes = [names.slice(0, names.length / 2), names.slice(names.length / 2)];
    await Promise.all(
      lanes.map(async (lane) => {
        for (const name of lane)
          await coldImportMs(join(outdir, name, 'index.mjs')).catch((e: Error) => failed.push(e.message.slice(0, 300)));
      }),
    );
    expect(failed).toEqual([]);
  }, 600_000);

  it('carry their own route rows, not the whole table', () => {
    const sizes = bundleSizes(metafile);
    const holding = (part: string) =>
      sizes.filter((b) => Object.keys(b.inputs).some((input) => input.includes(part))).map((b) => b.name);
    // The fallback matches every path against the table; every other function knows its own rows only.
    expect(holding('functions/routes.ts')).toEqual(['fallback']);
  });

  it("carry the AWS SDK's ESM build inside (no SDK is provided at run time) and leave DuckDB out", () => {
    const sizes = bundleSizes(metafile);
    const holding = (part: string) =>
      sizes.filter((b) => Object.keys(b.inputs).some((input) => input.includes(part))).map((b) => b.name);
    // Every function that reads the table carries the document client, as ES modules (mainFields).
    expect(holding('@aws-sdk/lib-dynamodb/dist-es/').length).toBeGreaterThan(50);
    expect(holding('@aws-sdk/lib-dynamodb/dist-cjs/')).toEqual([]);
    expect(holding('@aws-sdk/client-sqs/dist-es/')).toContain('capture');
    expect(Object.values(metafile.outputs).flatMap((o) => o.imports.filter((i) => /^@aws-sdk\//.test(i.path)))).toEqual(
      [],
    );
    // The lake's local engine (native, ~60 MB) is never bundled: at most a lazy import Lambda never reaches (Athena answers there).
    expect(holding('@duckdb/')).toEqual([]);
    const duckdb = Object.values(metafile.outputs).flatMap((o) => o.imports.filter((i) => i.path.includes('duckdb')));
    expect(duckdb.every((i) => i.external && i.kind === 'dynamic-import')).toBe(true);
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
    // The scripts ride beside the handler, not inside it.
    const script = readFileSync(join(sdk, 'dist', 'array.js'), 'utf8');
    const module = readFileSync(join(outdir, 'sdk_static', 'index.mjs'), 'utf8');
    expect(module).not.toContain(script.slice(0, 2_000));
    const bundle = bundleSizes(metafile).find((b) => b.name === 'sdk_static');
    expect(Object.keys(bundle?.inputs ?? {}).filter((input) => input.includes('posthog-js/dist/'))).toEqual([]);
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
