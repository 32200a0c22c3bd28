import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { routePaths, routes, type Route } from '#functions/routes.ts';
import { inputJsonSchema, serializeOpenApi } from '#infra/openapi/document.ts';
import { bracedPath } from '#shared/http/path-template.ts';
import { batchPut } from '#shared/db/batch.ts';
import { personItems } from '#shared/db/persons.ts';
import { generateOpenApi, OPENAPI_FILE, projectLevelOperationId } from '#infra/cli/openapi.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

const api = useApi();
const committedText = readFileSync(OPENAPI_FILE, 'utf8');
const doc = JSON.parse(committedText) as any;

// ------------------------------------------------------------------------------------------------
// A JSON Schema validator for the subset the document uses (a keyword it does not know throws).
// ------------------------------------------------------------------------------------------------

const ANNOTATIONS = new Set(['description', 'default', 'examples', 'title', 'x-parsed-as']);
const KEYWORDS = new Set([
  '$ref',
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'anyOf',
  'oneOf',
  'allOf',
]);
const FORMATS: Record<string, (s: string) => boolean> = {
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
  'date-time': (s) =>
    /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)),
  uri: (s) => URL.canParse(s),
};
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const equal = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function resolveRef(ref: string): any {
  if (!ref.startsWith('#/')) throw new Error(`external $ref ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((node: any, key) => {
      if (!node || !(key in node)) throw new Error(`dangling $ref ${ref}`);
      return node[key];
    }, doc);
}

function isType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'string':
      return typeof value === 'string';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObj(value);
    default:
      throw new Error(`unknown type ${type}`);
  }
}

function validate(schema: any, value: unknown, at = '$'): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${at}: no value is allowed`];
  const errors: string[] = [];
  const fail = (message: string) => errors.push(`${at}: ${message}`);
  for (const [k, s] of Object.entries(schema as Record<string, any>)) {
    if (k.startsWith('x-') || ANNOTATIONS.has(k)) continue;
    switch (k) {
      case '$ref':
        errors.push(...validate(resolveRef(s), value, at));
        break;
      case 'type':
        if (![s].flat().some((t: string) => isType(value, t)))
          fail(`expected ${[s].flat().join(' or ')}, got ${JSON.stringify(value)}`);
        break;
      case 'enum':
        if (!s.some((x: unknown) => equal(x, value)))
          fail(`${JSON.stringify(value)} is not one of ${JSON.stringify(s)}`);
        break;
      case 'const':
        if (!equal(s, value)) fail(`expected ${JSON.stringify(s)}`);
        break;
      case 'properties':
        if (isObj(value))
          for (const [p, ps] of Object.entries(s)) if (p in value) errors.push(...validate(ps, value[p], `${at}.${p}`));
        break;
      case 'required':
        if (isObj(value)) for (const p of s) if (!(p in value)) fail(`${p} is required`);
        break;
      case 'additionalProperties':
        if (isObj(value))
          for (const [p, pv] of Object.entries(value))
            if (!(p in (schema.properties ?? {}))) errors.push(...validate(s, pv, `${at}.${p}`));
        break;
      case 'propertyNames':
        if (isObj(value)) for (const p of Object.keys(value)) errors.push(...validate(s, p, `${at}[${p}]`));
        break;
      case 'items':
        if (Array.isArray(value))
          for (const [i, item] of value.entries()) errors.push(...validate(s, item, `${at}[${i}]`));
        break;
      case 'minItems':
        if (Array.isArray(value) && value.length < s) fail(`fewer than ${s} items`);
        break;
      case 'maxItems':
        if (Array.isArray(value) && value.length > s) fail(`more than ${s} items`);
        break;
      case 'minLength':
        if (typeof value === 'string' && [...value].length < s) fail(`shorter than ${s}`);
        break;
      case 'maxLength':
        if (typeof value === 'string' && [...value].length > s) fail(`longer than ${s}`);
        break;
      case 'pattern':
        if (typeof value === 'string' && !new RegExp(s, 'u').test(value)) fail(`does not match ${s}`);
        break;
      case 'format':
        if (!FORMATS[s]) throw new Error(`validator: unknown format ${s}`);
        if (typeof value === 'string' && !FORMATS[s](value)) fail(`not a ${s}`);
        break;
      case 'minimum':
        if (typeof value === 'number' && value < s) fail(`below ${s}`);
        break;
      case 'maximum':
        if (typeof value === 'number' && value > s) fail(`above ${s}`);
        break;
      case 'anyOf':
        if (!s.some((sub: unknown) => validate(sub, value, at).length === 0)) fail('matches none of anyOf');
        break;
      case 'oneOf':
        if (s.filter((sub: unknown) => validate(sub, value, at).length === 0).length !== 1)
          fail('does not match exactly one of oneOf');
        break;
      case 'allOf':
        for (const sub of s) errors.push(...validate(sub, value, at));
        break;
      default:
        throw new Error(`validator: unsupported keyword ${k}`);
    }
  }
  return errors;
}

/** The keywords a schema uses, nested schemas included. */
function keywordsIn(schema: unknown, out: Set<string>): Set<string> {
  if (!isObj(schema)) return out;
  for (const [k, child] of Object.entries(schema)) {
    out.add(k);
    if (k === 'properties') for (const c of Object.values(child as object)) keywordsIn(c, out);
    else if (['items', 'additionalProperties', 'propertyNames', 'x-parsed-as'].includes(k)) keywordsIn(child, out);
    else if (['anyOf', 'oneOf', 'allOf'].includes(k)) for (const c of child as unknown[]) keywordsIn(c, out);
  }
  return out;
}

/** Every schema in the document: components, and each `schema` of a parameter or media type. */
function documentSchemas(node: unknown = doc, out: unknown[] = Object.values(doc.components.schemas)): unknown[] {
  if (Array.isArray(node)) for (const n of node) documentSchemas(n, out);
  else if (isObj(node)) {
    for (const [k, child] of Object.entries(node)) {
      if (k === 'schema') out.push(child);
      else documentSchemas(child, out);
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// The document and the route table
// ------------------------------------------------------------------------------------------------

/** The operation the document gives for a route-table method + path (following alias path items). */
function operationFor(method: string, path: string): any {
  let item = doc.paths[bracedPath(path)];
  if (item?.$ref) item = resolveRef(item.$ref);
  return item?.[method.toLowerCase()];
}

describe('the OpenAPI document', () => {
  it('is what npm run openapi generates from the handlers today (run it after changing a route or a schema)', async () => {
    const fresh = serializeOpenApi(await generateOpenApi());
    expect(JSON.parse(committedText), 'docs/openapi.json is stale: run `npm run openapi`').toEqual(JSON.parse(fresh));
    expect(committedText, 'docs/openapi.json is not formatted as npm run openapi writes it').toBe(fresh);
  });

  it('is OpenAPI 3.1 with the personal-key security schemes and the shared Error component', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.description).toContain('trailing slash');
    expect(doc.components.securitySchemes.personalApiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.personalApiKey.description).toContain('`*`');
    expect(doc.components.securitySchemes.personalApiKeyQuery).toMatchObject({
      type: 'apiKey',
      in: 'query',
      name: 'personal_api_key',
    });
    expect(doc.components.schemas.Error.required).toEqual(['type', 'code', 'detail', 'attr']);
    const errorStatuses = new Set<string>();
    for (const item of Object.values(doc.paths as Record<string, any>)) {
      for (const [method, op] of Object.entries(item)) {
        if (method === '$ref') continue;
        for (const [status, response] of Object.entries((op as any).responses)) {
          if (status.startsWith('2')) continue;
          errorStatuses.add(status);
          expect(resolveRef((response as any).$ref).content['application/json'].schema, `${method} ${status}`).toEqual({
            $ref: '#/components/schemas/Error',
          });
        }
      }
    }
    expect([...errorStatuses]).toEqual(
      expect.arrayContaining(['400', '401', '403', '404', '413', '415', '429', '500']),
    );
    // 405 answers a method the path does not have: described once, not under every operation.
    expect(doc.components.responses.MethodNotAllowed.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Error',
    });
  });

  it('lists every route-table method and path, aliases included, with its operationId and scope', () => {
    for (const r of routePaths) {
      const op = operationFor(r.method, r.path);
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      const projectLevel = r.path.startsWith('/api/projects/');
      expect(op.operationId, `${r.method} ${r.path}`).toBe(
        projectLevel ? projectLevelOperationId(r.operationId) : r.operationId,
      );
      if (projectLevel) expect(op.description).toContain(`The same operation as \`${r.operationId}\``);
      expect(op.summary).toBe(r.summary);
      if (r.auth === 'project_token' || r.auth === 'public') expect(op.security).toEqual([]);
      else
        expect(op.security).toEqual(
          [r.scope, ...(r.alsoAccepts ?? [])].flatMap((s) => [{ personalApiKey: [s] }, { personalApiKeyQuery: [s] }]),
        );
    }
    const documented = Object.values(doc.paths as Record<string, any>).flatMap((item) =>
      Object.keys(item)
        .filter((k) => k !== '$ref')
        .map(() => 1),
    );
    const projectLevel = routePaths.filter((r) => r.path.startsWith('/api/projects/'));
    expect(projectLevel.length).toBeGreaterThan(0);
    expect(documented).toHaveLength(routes.length + projectLevel.length);
    expect(Object.keys(doc.paths).sort()).toEqual([...new Set(routePaths.map((r) => bracedPath(r.path)))].sort());
    expect(Object.keys(doc.paths).filter((p) => p.length > 1 && p.endsWith('/'))).toEqual([]);
  });

  it('gives every operation an operationId of its own (alias paths included)', () => {
    const ids = Object.values(doc.paths as Record<string, any>).flatMap((item) =>
      item.$ref ? [] : Object.values(item).map((op: any) => op.operationId as string),
    );
    expect(ids.length).toBeGreaterThan(routes.length);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it('documents each /api/projects path as its /api/environments operation, under an operationId of its own', () => {
    const projectLevel = routePaths.filter((p) => p.path.startsWith('/api/projects/'));
    expect(projectLevel.length).toBeGreaterThanOrEqual(19);
    for (const r of projectLevel) {
      const { operationId, description, ...alias } = operationFor(r.method, r.path);
      const original = operationFor(r.method, r.path.replace('/api/projects/', '/api/environments/'));
      expect(operationId).toBe(projectLevelOperationId(original.operationId));
      const sameAs = `The same operation as \`${original.operationId}\` (\`${bracedPath(r.path.replace('/api/projects/', '/api/environments/'))}\`).`;
      expect(description).toBe([sameAs, original.description].filter(Boolean).join(' '));
      const { operationId: _, description: __, ...rest } = original;
      expect(alias, `${r.method} ${r.path}`).toEqual(rest);
    }
  });

  it('documents every path parameter, format=csv and text/csv where the route has CSV, and the capture token note', () => {
    for (const r of routePaths) {
      const op = operationFor(r.method, r.path);
      const names = [...r.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
      expect((op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name)).toEqual(names);
      const success = Object.entries(op.responses).find(([s]) => s.startsWith('2'))![1] as any;
      const csv = (op.parameters ?? []).find((p: any) => p.name === 'format');
      if (r.csv) {
        expect(csv.schema.enum).toEqual(['json', 'csv']);
        if (success.content) expect(success.content['text/csv']).toBeDefined();
      } else {
        expect(csv).toBeUndefined();
      }
    }
    expect(operationFor('POST', '/capture').description).toContain('project token');
  });

  it('uses only JSON Schema keywords this file validates', () => {
    const used = new Set<string>();
    for (const schema of documentSchemas()) keywordsIn(schema, used);
    expect([...used].filter((k) => !KEYWORDS.has(k) && !ANNOTATIONS.has(k) && !k.startsWith('x-'))).toEqual([]);
  });

  it('answers GET /api/schema and /api/schema/ with the committed document, without a key', async () => {
    for (const path of ['/api/schema', '/api/schema/']) {
      const res = await api.as().get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.body).toEqual(doc);
    }
  });
});

// ------------------------------------------------------------------------------------------------
// valibot -> JSON Schema: the constructs the converter cannot take as they are
// ------------------------------------------------------------------------------------------------

describe('valibot schemas as the input the document describes', () => {
  it('stops at a transformation: the query string stays a string and its numeric bounds are described', () => {
    const limit = v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number), v.minValue(1), v.maxValue(100));
    expect(inputJsonSchema(v.object({ limit: v.optional(limit, '10') }))).toEqual({
      type: 'object',
      properties: {
        limit: {
          type: 'string',
          pattern: '^\\d+$',
          description: 'Read as a number: at least 1, at most 100.',
          default: '10',
        },
      },
    });
  });

  it('keeps a second schema of a pipe that checks the same value (string then picklist)', () => {
    const flag = v.pipe(
      v.string(),
      v.picklist(['true', 'false']),
      v.transform((s) => s === 'true'),
    );
    expect(inputJsonSchema(flag)).toEqual({ type: 'string', enum: ['true', 'false'] });
  });

  it('describes a schema after a transformation as x-parsed-as', () => {
    const levels = v.pipe(
      v.string(),
      v.transform((s) => s.split(',')),
      v.array(v.picklist(['A', 'B'])),
    );
    expect(inputJsonSchema(levels)).toEqual({
      type: 'string',
      'x-parsed-as': { type: 'array', items: { type: 'string', enum: ['A', 'B'] } },
    });
  });

  it('turns trim + minLength(1) into a non-blank pattern and keeps maxLength (stricter, never looser)', () => {
    const name = v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(5));
    const schema = inputJsonSchema(name);
    expect(schema).toMatchObject({ type: 'string', minLength: 1, pattern: '\\S', maxLength: 5 });
    expect(validate(schema, '   ')).not.toEqual([]);
    expect(validate(schema, ' ab ')).toEqual([]);
    expect(() => inputJsonSchema(v.pipe(v.string(), v.trim(), v.minLength(2)))).toThrow(/after trim/);
  });

  it('probes a v.custom predicate for the JSON types it accepts, and describes a v.check by its message', () => {
    const dict = v.custom<Record<string, unknown>>(
      (p) => typeof p === 'object' && p !== null && !Array.isArray(p),
      'A dictionary.',
    );
    expect(inputJsonSchema(v.object({ d: dict }))).toEqual({
      type: 'object',
      properties: { d: { type: 'object', description: 'A dictionary.' } },
      required: ['d'],
    });
    const either = v.pipe(
      v.object({ a: v.optional(v.string()), b: v.optional(v.string()) }),
      v.check((x) => (x.a === undefined) !== (x.b === undefined), 'Give a or b.'),
    );
    expect(inputJsonSchema(either)).toMatchObject({ type: 'object', description: 'Give a or b.' });
    expect(() =>
      inputJsonSchema(
        v.pipe(
          v.string(),
          v.check((s) => s.length > 0),
        ),
      ),
    ).toThrow(/message/);
  });

  it('keeps body fields whose names look like keywords', () => {
    expect(inputJsonSchema(v.object({ $schema: v.string(), required: v.optional(v.array(v.string())) }))).toEqual({
      type: 'object',
      properties: { $schema: { type: 'string' }, required: { type: 'array', items: { type: 'string' } } },
      required: ['$schema'],
    });
  });

  it('throws on what it cannot describe rather than emitting a wrong schema', () => {
    expect(() => inputJsonSchema(v.pipe(v.string(), v.transform(Number), v.integer()))).toThrow(
      /after a transformation/,
    );
    expect(() => inputJsonSchema(v.date() as unknown as v.GenericSchema)).toThrow();
  });
});

// ------------------------------------------------------------------------------------------------
// An example request per operation: valid for the document, and accepted by the endpoint
// ------------------------------------------------------------------------------------------------

interface Example {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
}

interface Ctx {
  key: string;
  orgId: string;
  orgToDelete: string;
  projectId: string;
  token: string;
  person: string;
  personToDelete: string;
  personToSplit: string;
  personWithoutIds: string;
  action: string;
  actionToDelete: string;
  exportId: string;
  exportToDelete: string;
  /** A query that ran in the background and completed (ids of queries that did not run since the examples changed persons: their results are withheld). */
  queryId: () => Promise<string>;
  /** A new backfill of one whole day of `exportId` (a daily export), a different day each call. */
  backfill: () => Promise<{ backfill_id: string }>;
  /** A run of `exportId` (queued by one backfill, made once). */
  runId: () => Promise<string>;
}

const FUTURE = '2099-01-01T00:00:00Z';
const s3 = {
  type: 'S3',
  config: {
    bucket_name: 'openapi-bucket',
    region: 'us-east-1',
    prefix: 'openapi',
    role_arn: 'arn:aws:iam::123456789012:role/exports',
  },
};

/** A static cohort of the example project holding its main person (the cohort examples each get their own). */
async function staticCohort(c: Ctx): Promise<string> {
  const res = await api.as(c.key).post(`/api/environments/${c.projectId}/cohorts`, {
    name: 'Example static',
    is_static: true,
    _create_static_person_ids: [Number(c.person)],
  });
  return String(res.body.id);
}

const examples: Record<string, (c: Ctx) => Example | Promise<Example>> = {
  organizations_list: () => ({ query: { limit: '10', offset: '0' } }),
  organizations_create: () => ({
    body: { name: 'Created from the OpenAPI example', is_member_join_email_enabled: false },
  }),
  organizations_retrieve: (c) => ({ params: { id: c.orgId } }),
  organizations_partial_update: (c) => ({
    params: { id: c.orgId },
    body: { name: '  Renamed org  ', enforce_2fa: false },
  }),
  organizations_destroy: (c) => ({ params: { id: c.orgToDelete } }),
  persons_list: (c) => ({
    params: { project_id: c.projectId },
    query: { limit: '5', distinct_id: 'oa-main', format: 'json' },
  }),
  persons_bulk_delete: (c) => ({
    params: { project_id: c.projectId },
    body: { distinct_ids: ['oa-bulk', 'oa-missing'] },
  }),
  persons_retrieve: (c) => ({ params: { project_id: c.projectId, id: c.person } }),
  persons_partial_update: (c) => ({
    params: { project_id: c.projectId, id: c.person },
    body: { properties: { plan: 'pro' } },
  }),
  persons_destroy: (c) => ({
    params: { project_id: c.projectId, id: c.personToDelete },
    query: { delete_events: 'false' },
  }),
  persons_activity: (c) => ({ params: { project_id: c.projectId, id: c.person }, query: { limit: '5', page: '1' } }),
  persons_delete_property: (c) => ({ params: { project_id: c.projectId, id: c.person }, query: { $unset: 'name' } }),
  persons_properties_timeline: (c) => ({
    params: { project_id: c.projectId, id: c.person },
    query: { from: '2020-01-01T00:00:00Z' },
  }),
  persons_split: (c) => ({
    params: { project_id: c.projectId, id: c.personToSplit },
    body: { main_distinct_id: 'oa-split' },
  }),
  persons_values: (c) => ({ params: { project_id: c.projectId }, query: { key: 'plan', value: 'fr' } }),
  persons_update_property: (c) => ({
    params: { project_id: c.projectId, id: c.person },
    body: { key: 'plan', value: 'free' },
  }),
  // A person without distinct ids has no events to delete: nothing reaches the deletion queue, which
  // test/integration/person-deletion.test.ts owns.
  persons_delete_events: (c) => ({ params: { project_id: c.projectId, id: c.personWithoutIds } }),
  persons_reset_person_distinct_id: (c) => ({
    params: { project_id: c.projectId },
    body: { distinct_id: 'oa-never-seen' },
  }),
  projects_retrieve: (c) => ({ params: { project_id: c.projectId } }),
  projects_partial_update: (c) => ({
    params: { project_id: c.projectId },
    body: { name: 'Renamed project', week_start_day: 1, timezone: 'UTC' },
  }),
  groups_types_list: (c) => ({ params: { project_id: c.projectId } }),
  groups_types_update_metadata: (c) => ({
    params: { project_id: c.projectId },
    body: [{ group_type_index: 0, name_singular: 'Company', name_plural: 'Companies' }],
  }),
  groups_list: (c) => ({ params: { project_id: c.projectId }, query: { group_type_index: '0', search: 'OA' } }),
  groups_find: (c) => ({ params: { project_id: c.projectId }, query: { group_type_index: '0', group_key: 'oa-co' } }),
  groups_property_timeline: (c) => ({
    params: { project_id: c.projectId },
    query: { group_type_index: '0', group_key: 'oa-co', from: '2020-01-01T00:00:00Z' },
  }),
  groups_property_definitions: (c) => ({ params: { project_id: c.projectId } }),
  event_definitions_list: (c) => ({ params: { project_id: c.projectId } }),
  property_definitions_list: (c) => ({
    params: { project_id: c.projectId },
    query: { event_names: '["signup"]', search: 'a', limit: '20' },
  }),
  actions_list: (c) => ({ params: { project_id: c.projectId }, query: { limit: '20' } }),
  actions_create: (c) => ({
    params: { project_id: c.projectId },
    body: { name: 'Signed up', description: 'From the example', steps: [{ event: 'signup' }] },
  }),
  actions_retrieve: (c) => ({ params: { project_id: c.projectId, id: c.action } }),
  actions_partial_update: (c) => ({
    params: { project_id: c.projectId, id: c.action },
    body: { steps: [{ event: 'seen', properties: [] }] },
  }),
  actions_destroy: (c) => ({ params: { project_id: c.projectId, id: c.actionToDelete } }),
  cohorts_list: (c) => ({ params: { project_id: c.projectId }, query: { limit: '10', type: 'static', search: 'ex' } }),
  cohorts_create: (c) => ({
    params: { project_id: c.projectId },
    body: {
      name: 'Paying',
      filters: { properties: { type: 'AND', values: [{ key: 'plan', value: 'pro', type: 'person' }] } },
    },
  }),
  cohorts_retrieve: async (c) => ({ params: { project_id: c.projectId, id: await staticCohort(c) } }),
  cohorts_partial_update: async (c) => ({
    params: { project_id: c.projectId, id: await staticCohort(c) },
    body: { name: 'Renamed cohort', description: 'From the example' },
  }),
  cohorts_persons: async (c) => ({
    params: { project_id: c.projectId, id: await staticCohort(c) },
    query: { limit: '10', format: 'json' },
  }),
  cohorts_add_persons_to_static_cohort: async (c) => ({
    params: { project_id: c.projectId, id: await staticCohort(c) },
    body: { person_ids: [Number(c.person)] },
  }),
  cohorts_remove_person_from_static_cohort: async (c) => ({
    params: { project_id: c.projectId, id: await staticCohort(c) },
    body: { person_id: Number(c.person) },
  }),
  cohorts_duplicate_as_static_cohort: async (c) => ({ params: { project_id: c.projectId, id: await staticCohort(c) } }),
  persons_cohorts: (c) => ({ params: { project_id: c.projectId }, query: { person_id: c.person } }),
  insights_trend_retrieve: (c) => ({
    params: { project_id: c.projectId },
    query: { events: JSON.stringify([{ id: 'seen' }]), date_from: '-7d', interval: 'day' },
  }),
  insights_trend: (c) => ({
    params: { project_id: c.projectId },
    query: { refresh: 'true' },
    body: { events: [{ id: 'seen', math: 'dau' }], date_from: '-7d' },
  }),
  query_create: (c) => ({
    params: { project_id: c.projectId },
    body: {
      query: {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: 'seen', math: 'dau' }],
        dateRange: { date_from: '-7d' },
      },
      refresh: 'force_blocking',
    },
  }),
  query_retrieve: async (c) => ({ params: { project_id: c.projectId, id: await c.queryId() } }),
  query_destroy: async (c) => ({ params: { project_id: c.projectId, id: await c.queryId() } }),
  batch_exports_list: (c) => ({ params: { organization_id: c.orgId }, query: { limit: '10' } }),
  batch_exports_create: (c) => ({
    params: { organization_id: c.orgId },
    body: { name: 'Example export', destination: s3, interval: 'day', start_at: FUTURE },
  }),
  batch_exports_retrieve: (c) => ({ params: { organization_id: c.orgId, id: c.exportId } }),
  batch_exports_partial_update: (c) => ({
    params: { organization_id: c.orgId, id: c.exportId },
    body: { paused: true },
  }),
  batch_exports_destroy: (c) => ({ params: { organization_id: c.orgId, id: c.exportToDelete } }),
  batch_exports_backfill: (c) => ({
    params: { organization_id: c.orgId, id: c.exportId },
    body: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-02T00:00:00Z' },
  }),
  // The local S3 with a bucket that does not exist: answered 200 with the head-bucket step Failed.
  batch_exports_test: (c) => ({
    params: { organization_id: c.orgId },
    body: {
      destination: {
        type: 'S3Compatible',
        config: {
          bucket_name: 'openapi-missing-bucket',
          prefix: 'openapi',
          endpoint_url: inject('s3Endpoint'),
          aws_access_key_id: 'S3RVER',
          aws_secret_access_key: 'S3RVER',
        },
      },
    },
  }),
  batch_exports_logs: (c) => ({
    params: { organization_id: c.orgId, id: c.exportId },
    query: { level: 'INFO,ERROR', limit: '10' },
  }),
  batch_exports_backfills_create: (c) => ({
    params: { organization_id: c.orgId, id: c.exportId },
    body: { start_at: '2024-02-01T00:00:00Z', end_at: '2024-02-03T00:00:00Z', allow_overlap: true },
  }),
  batch_exports_backfills_list: (c) => ({
    params: { organization_id: c.orgId, id: c.exportId },
    query: { ordering: 'start_at', limit: '10' },
  }),
  batch_exports_backfills_retrieve: async (c) => ({
    params: { organization_id: c.orgId, id: c.exportId, backfill_id: (await c.backfill()).backfill_id },
  }),
  batch_exports_backfills_cancel: async (c) => ({
    params: { organization_id: c.orgId, id: c.exportId, backfill_id: (await c.backfill()).backfill_id },
  }),
  batch_exports_runs_list: (c) => ({
    params: { organization_id: c.orgId, id: c.exportId },
    query: { status: 'Starting,Completed', ordering: '-data_interval_start', limit: '10' },
  }),
  batch_exports_runs_retrieve: async (c) => ({
    params: { organization_id: c.orgId, id: c.exportId, run_id: await c.runId() },
  }),
  batch_exports_runs_retry: async (c) => ({
    params: { organization_id: c.orgId, id: c.exportId, run_id: await c.runId() },
  }),
  batch_exports_runs_cancel: async (c) => ({
    params: { organization_id: c.orgId, id: c.exportId, run_id: await c.runId() },
  }),
  batch_exports_runs_logs: async (c) => ({
    params: { organization_id: c.orgId, id: c.exportId, run_id: await c.runId() },
    query: { limit: '10' },
  }),
  batch_exports_pause: (c) => ({ params: { organization_id: c.orgId, id: c.exportId } }),
  batch_exports_unpause: (c) => ({ params: { organization_id: c.orgId, id: c.exportId }, body: { backfill: false } }),
  schema: () => ({}),
  capture: (c) => ({
    body: {
      api_key: c.token,
      event: 'openapi example',
      distinct_id: 'oa-capture',
      properties: { $set: { from: 'example' } },
    },
  }),
  sdk_remote_config: (c) => ({ params: { token: c.token } }),
  sdk_remote_config_js: (c) => ({ params: { token: c.token } }),
  sdk_flags: (c) => ({ body: { token: c.token, distinct_id: 'oa-main' } }),
  sdk_decide: (c) => ({ body: { token: c.token, distinct_id: 'oa-main' } }),
  sdk_static: () => ({ params: { file: 'array.js' } }),
  console_index: () => ({}),
  // The build the run's global setup made (dist/console): its manifest names the version.
  console_asset: () => ({
    params: {
      version: JSON.parse(readFileSync(new URL('../../dist/console/manifest.json', import.meta.url), 'utf8')).version,
      file: 'app.js',
    },
  }),
  sdk_static_versioned: () => ({
    params: {
      version: JSON.parse(readFileSync(new URL('../../node_modules/posthog-js/package.json', import.meta.url), 'utf8'))
        .version,
      file: 'surveys.js',
    },
  }),
};

/** What the document says is wrong with the example (an empty list when it is valid). */
function requestErrors(op: any, ex: Example): string[] {
  const errors: string[] = [];
  const parameters: any[] = op.parameters ?? [];
  const pathParams = parameters.filter((p) => p.in === 'path');
  for (const p of pathParams) {
    if (ex.params?.[p.name] === undefined) errors.push(`path ${p.name} missing`);
    else errors.push(...validate(p.schema, ex.params[p.name], `path.${p.name}`));
  }
  for (const name of Object.keys(ex.params ?? {}))
    if (!pathParams.some((p) => p.name === name)) errors.push(`path ${name} not documented`);
  const named = parameters.filter((p) => p.in === 'query' && p.style !== 'form');
  const freeForm = parameters.find((p) => p.in === 'query' && p.style === 'form' && p.explode);
  const rest: Record<string, string> = {};
  for (const [name, value] of Object.entries(ex.query ?? {})) {
    const p = named.find((q) => q.name === name);
    if (p) errors.push(...validate(p.schema, value, `query.${name}`));
    else if (freeForm) rest[name] = value;
    else errors.push(`query ${name} not documented`);
  }
  for (const p of named) if (p.required && ex.query?.[p.name] === undefined) errors.push(`query ${p.name} is required`);
  if (freeForm) errors.push(...validate(freeForm.schema, rest, 'query'));
  if (ex.body === undefined) {
    if (op.requestBody?.required) errors.push('body is required');
  } else if (!op.requestBody) {
    errors.push('body not documented');
  } else {
    errors.push(...validate(op.requestBody.content['application/json'].schema, ex.body, 'body'));
  }
  return errors;
}

async function personWithoutIds(projectId: number): Promise<string> {
  const id = 9_000_000;
  await batchPut(
    personItems({
      id,
      uuid: '00000000-0000-7000-8000-000009000000',
      project_id: projectId,
      properties: {},
      distinct_ids: [],
      created_at: '2024-01-01T00:00:00.000Z',
      is_identified: false,
      version: 1,
    }),
  );
  return String(id);
}

async function send(route: Route, path: string, ex: Example, key: string | undefined) {
  const url = path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(ex.params![name]!));
  const query = ex.query ? `?${new URLSearchParams(ex.query)}` : '';
  return api.as(key).request(route.method, url + query, { body: ex.body });
}

describe('an example request for each operation', () => {
  let ctx: Ctx;
  let backfills = 0;
  let runId: Promise<string> | undefined;

  beforeAll(async () => {
    const p = await newProject(api.as);
    const c = api.as(p.key);
    const base = `/api/environments/${p.projectId}`;
    const capture = await api.as().post('/batch', {
      api_key: p.token,
      batch: [
        { event: 'seen', distinct_id: 'oa-main', properties: { $set: { name: 'Main', plan: 'free' } } },
        { event: 'seen', distinct_id: 'oa-del' },
        { event: 'seen', distinct_id: 'oa-bulk' },
        { event: '$pageview', distinct_id: 'oa-anon' },
        { event: '$identify', distinct_id: 'oa-split', properties: { $anon_distinct_id: 'oa-anon' } },
        {
          event: '$groupidentify',
          distinct_id: 'oa-main',
          properties: { $group_type: 'company', $group_key: 'oa-co', $group_set: { name: 'OA Co' } },
        },
      ],
    });
    expect(capture.status).toBe(200);
    await eventually(async () =>
      expect((await c.get(`${base}/groups/find?group_type_index=0&group_key=oa-co`)).status).toBe(200),
    );
    const personId = (distinctId: string, ids = 1) =>
      eventually(async () => {
        const res = await c.get(`${base}/persons?distinct_id=${distinctId}`);
        expect(res.body.results).toHaveLength(1);
        expect(res.body.results[0].distinct_ids).toHaveLength(ids);
        return String(res.body.results[0].id);
      });
    const action = async () =>
      String((await c.post(`${base}/actions`, { name: 'Seen', steps: [{ event: 'seen' }] })).body.id);
    const completedQuery = async () => {
      const query = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'seen' }] };
      const id = (await c.post(`${base}/query`, { query, refresh: 'force_async' })).body.query_status.id as string;
      await eventually(async () => expect((await c.get(`${base}/query/${id}`)).status).toBe(200), 30_000);
      return id;
    };
    const exportId = async () =>
      String(
        (
          await c.post(`/api/organizations/${p.org.id}/batch_exports`, {
            name: 'Example',
            destination: s3,
            interval: 'day',
            start_at: FUTURE,
          })
        ).body.id,
      );
    ctx = {
      key: p.key,
      orgId: p.org.id,
      orgToDelete: (await c.post('/api/organizations', { name: 'To delete' })).body.id,
      projectId: String(p.projectId),
      token: p.token,
      person: await personId('oa-main'),
      personToDelete: await personId('oa-del'),
      personToSplit: await personId('oa-split', 2),
      personWithoutIds: await personWithoutIds(p.projectId),
      action: await action(),
      actionToDelete: await action(),
      exportId: await exportId(),
      exportToDelete: await exportId(),
      queryId: completedQuery,
      backfill: async () => {
        backfills += 1;
        const start = new Date(Date.UTC(2024, 2, backfills)).toISOString();
        const end = new Date(Date.UTC(2024, 2, backfills + 1)).toISOString();
        const res = await c.post(`/api/organizations/${p.org.id}/batch_exports/${ctx.exportId}/backfills`, {
          start_at: start,
          end_at: end,
        });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return res.body as { backfill_id: string };
      },
      runId: async () => {
        runId ??= (async () => {
          await ctx.backfill();
          const runs = await c.get(`/api/organizations/${p.org.id}/batch_exports/${ctx.exportId}/runs`);
          return String(runs.body.results[0].id);
        })();
        return runId;
      },
    };
    await personId('oa-bulk');
  }, 60_000);

  it('exists for every operation in the route table', () => {
    expect(Object.keys(examples).sort()).toEqual(routes.map((r) => r.operationId).sort());
  });

  it.each((routes as readonly Route[]).map((r) => [r.operationId, r] as const))(
    '%s: the example validates against the document and the endpoint answers it with a documented 2xx',
    async (_, route) => {
      const make = examples[route.operationId];
      if (!make) throw new Error(`no example for ${route.operationId}`);
      const ex = await make(ctx);
      const op = operationFor(route.method, route.path);
      expect(requestErrors(op, ex)).toEqual([]);
      const key = route.auth === 'project_token' || route.auth === 'public' ? undefined : ctx.key;
      for (const path of [route.path, ...(route.aliases ?? [])]) {
        const res = await send(route, path, ex, key);
        const documented = Object.keys(op.responses).filter((s) => s.startsWith('2'));
        expect([path, res.status, res.status >= 300 ? res.body : undefined]).toEqual([
          path,
          Number(documented[0]),
          undefined,
        ]);
        const content = op.responses[documented[0]!].content;
        if (content?.['application/json'])
          expect(validate(content['application/json'].schema, res.body, 'response')).toEqual([]);
        else if (content) expect(res.headers.get('content-type')).toContain(Object.keys(content)[0]);
        else expect(res.text).toBe('');
      }
    },
  );

  it.each([
    ['organizations_create', () => ({ body: {} })],
    ['organizations_create', () => ({ body: { name: '   ' } })],
    ['organizations_partial_update', (c: Ctx) => ({ params: { id: c.orgId }, body: { logo_media_id: 'not-a-uuid' } })],
    ['persons_retrieve', (c: Ctx) => ({ params: { project_id: c.projectId, id: 'abc' } })],
    [
      'persons_partial_update',
      (c: Ctx) => ({ params: { project_id: c.projectId, id: c.person }, body: { properties: ['a'] } }),
    ],
    [
      'persons_destroy',
      (c: Ctx) => ({ params: { project_id: c.projectId, id: c.person }, query: { delete_events: 'yes' } }),
    ],
    ['persons_bulk_delete', (c: Ctx) => ({ params: { project_id: c.projectId }, body: { ids: [] } })],
    ['persons_list', (c: Ctx) => ({ params: { project_id: c.projectId }, query: { limit: 'ten' } })],
    [
      'persons_properties_timeline',
      (c: Ctx) => ({ params: { project_id: c.projectId, id: c.person }, query: { from: '2024-01-01' } }),
    ],
    ['actions_create', (c: Ctx) => ({ params: { project_id: c.projectId }, body: { name: 'No steps', steps: [] } })],
    [
      'insights_trend',
      (c: Ctx) => ({
        params: { project_id: c.projectId },
        query: { refresh: 'maybe' },
        body: { events: [{ id: 'seen' }] },
      }),
    ],
    ['projects_partial_update', (c: Ctx) => ({ params: { project_id: c.projectId }, body: { week_start_day: 3 } })],
    ['groups_list', (c: Ctx) => ({ params: { project_id: c.projectId }, query: { group_type_index: 'zero' } })],
    [
      'groups_types_update_metadata',
      (c: Ctx) => ({ params: { project_id: c.projectId }, body: [{ group_type_index: 'zero' }] }),
    ],
  ] as [string, (c: Ctx) => Example][])(
    '%s: a request the document rejects is refused with 400 (%#)',
    async (operationId, make) => {
      const route = (routes as readonly Route[]).find((r) => r.operationId === operationId)!;
      const ex = make(ctx);
      expect(requestErrors(operationFor(route.method, route.path), ex)).not.toEqual([]);
      const res = await send(route, route.path, ex, ctx.key);
      expect(res.status).toBe(400);
      expect(res.body.type).toBe('validation_error');
      expect(validate(resolveRef('#/components/schemas/Error'), res.body, 'error')).toEqual([]);
    },
  );
});
