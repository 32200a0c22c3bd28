/**
 * The OpenAPI 3.1 document, built from the route table rows and the valibot schemas the handlers
 * validate with (the factory attaches both to each handler; infra/cli/openapi.ts collects them).
 * Build tooling, not runtime: nothing under shared/ or functions/ imports it (a layer test checks),
 * so @valibot/to-json-schema and this file never reach a Lambda bundle.
 *
 * The document describes what a client may SEND: every schema is the valibot schema's input side.
 * @valibot/to-json-schema converts the structure; the parts it cannot convert are handled here on
 * purpose, not ignored (`errorMode: 'throw'` stays on, so a new construct fails the generator):
 * - a type-changing transformation (`v.transform(Number)` on a query string) ends the input: what
 *   comes before it is the input schema; `min_value`/`max_value` after it are described in words, and a
 *   schema after it (what the transformed value must be) goes in an `x-parsed-as` annotation;
 * - `v.trim()` keeps the length checks after it on the raw input (stricter by at most the padding)
 *   and turns `minLength(1)` into "has a non-whitespace character";
 * - a second schema in a pipe before any transformation (`string` then `picklist`) validates the same
 *   value: both hold (allOf, merged when they do not clash);
 * - `v.check` (a cross-field predicate) is described with its message;
 * - `v.custom` (a predicate) is probed with one sample of each JSON type to find the types it accepts.
 * Everything else the converter does not know throws.
 */
import * as v from 'valibot';
import { toJsonSchema, type ConversionConfig, type JsonSchema } from '@valibot/to-json-schema';
import { SCOPE_OBJECTS } from '#shared/auth/scopes.ts';
import type { Schemas } from '#shared/http/handler.ts';
import { bracedPath, pathParamNames } from '#shared/http/path-template.ts';
import { tenancyOf } from '#shared/http/tenancy.ts';

/** What the document needs of a route-table row (functions/routes.ts rows satisfy it). */
export interface OpenApiRoute {
  operationId: string;
  method: string;
  path: string;
  aliases?: readonly string[];
  /**
   * This entry documents another path of the operation `operationId` (at `path`) as an operation of
   * its own, with an operationId of its own: a `$ref` to the original path item would repeat the
   * operationId, which must be unique in the document.
   */
  aliasOf?: { operationId: string; path: string };
  auth?: string;
  scope?: string;
  /** Further scopes that grant the operation (documented as alternative security requirements). */
  alsoAccepts?: readonly string[];
  csv?: boolean;
  summary: string;
}

export interface OpenApiEntry {
  route: OpenApiRoute;
  schemas: Schemas;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
export type OpenApiDocument = JsonObject;

// ------------------------------------------------------------------------------------------------
// valibot -> JSON Schema (input side)
// ------------------------------------------------------------------------------------------------

// valibot's schema and action objects, read structurally (the converter reads them the same way).
// biome-ignore lint/suspicious/noExplicitAny: valibot's schema nodes, read by kind; their fields differ per kind.
type Node = { kind: string; type: string; [key: string]: any };

const flattenPipe = (pipe: readonly Node[]): Node[] =>
  pipe.flatMap((item) => ('pipe' in item ? flattenPipe(item.pipe) : [item]));

class UnsupportedSchema extends Error {
  override name = 'UnsupportedSchema';
}

/** A copy of `schema` whose JSON Schema conversion is the contract for the input (see the header). */
function inputView(schema: Node): Node {
  if ('pipe' in schema) return pipeInputView(schema);
  const each = (entries: Record<string, Node>) =>
    Object.fromEntries(Object.entries(entries).map(([k, s]) => [k, inputView(s)]));
  switch (schema.type) {
    case 'object':
    case 'loose_object':
    case 'strict_object':
    case 'object_with_rest':
      return { ...schema, entries: each(schema.entries), ...(schema.rest ? { rest: inputView(schema.rest) } : {}) };
    case 'optional':
    case 'exact_optional':
    case 'undefinedable':
    case 'nullable':
    case 'nullish':
      return { ...schema, wrapped: inputView(schema.wrapped) };
    case 'array':
      return { ...schema, item: inputView(schema.item) };
    case 'record':
      return { ...schema, key: inputView(schema.key), value: inputView(schema.value) };
    case 'union':
    case 'variant':
    case 'intersect':
      return { ...schema, options: schema.options.map(inputView) };
    default:
      return schema;
  }
}

const describeBound: Record<string, string> = { min_value: 'at least', max_value: 'at most' };

function pipeInputView(schema: Node): Node {
  const [root, ...items] = flattenPipe(schema.pipe);
  const kept: Node[] = [];
  const sameValueSchemas: Node[] = [];
  const descriptions: string[] = [];
  let output: Node[] | undefined;
  let trimmed = false;
  for (const item of items) {
    if (output) {
      // What checks the transformed value (the output): described, not part of the input schema.
      if (item.kind === 'transformation') break;
      output.push(item);
    } else if (item.kind === 'schema') {
      sameValueSchemas.push(inputView(item));
    } else if (item.kind === 'transformation') {
      if (item.type === 'trim') trimmed = true;
      else output = [];
    } else if (item.type === 'check') {
      if (typeof item.message !== 'string')
        throw new UnsupportedSchema('a v.check without a message: give it one so the document can describe it');
      descriptions.push(item.message);
    } else if (item.type === 'description') {
      descriptions.unshift(item.description);
    } else if (trimmed && item.type === 'min_length') {
      if (item.requirement > 1)
        throw new UnsupportedSchema(`minLength(${item.requirement}) after trim cannot be expressed on the input`);
      kept.push(item);
      if (item.requirement === 1) kept.push(v.regex(/\S/) as unknown as Node);
    } else if (trimmed && item.kind === 'validation' && item.type !== 'max_length') {
      throw new UnsupportedSchema(`"${item.type}" after trim: describe it in infra/openapi/document.ts`);
    } else {
      kept.push(item);
    }
  }
  if (trimmed) descriptions.push('Leading and trailing whitespace is removed.');
  if (output?.length) {
    const [first, ...rest] = output;
    if (first!.kind === 'schema') {
      // The value after the transformation must match this (e.g. a comma-separated string read as a list).
      const parsed = inputJsonSchema({ ...first!, pipe: [first!, ...rest] } as unknown as v.GenericSchema);
      kept.push(v.metadata({ 'x-parsed-as': parsed }) as unknown as Node);
    } else {
      const bounds = output.flatMap((item) => {
        if (!(item.type in describeBound) || typeof item.requirement !== 'number') {
          throw new UnsupportedSchema(
            `"${item.type}" after a transformation: describe it in infra/openapi/document.ts`,
          );
        }
        // No upper bound worth reading: the largest exact integer.
        return Math.abs(item.requirement) >= Number.MAX_SAFE_INTEGER
          ? []
          : [`${describeBound[item.type]} ${item.requirement}`];
      });
      if (bounds.length) descriptions.push(`Read as a number: ${bounds.join(', ')}.`);
    }
  }
  if (descriptions.length) kept.push(v.description(descriptions.join(' ')) as unknown as Node);
  const base = inputView(root!);
  const main: Node = kept.length ? { ...base, pipe: [base, ...kept] } : base;
  if (!sameValueSchemas.length) return main;
  return { kind: 'schema', type: 'intersect', options: [main, ...sameValueSchemas] } as Node;
}

/** One sample per JSON type: a `v.custom` predicate is described by the types it lets through. */
const PROBES: [string, unknown[]][] = [
  ['null', [null]],
  ['boolean', [true, false]],
  ['number', [0, 1, -1, 0.5]],
  ['string', ['', 'a', '1']],
  ['array', [[], [1], ['a']]],
  ['object', [{}, { a: 1 }]],
];

function customJsonSchema(schema: Node): JsonSchema {
  const accepts = (sample: unknown) => v.safeParse(schema as unknown as v.GenericSchema, sample).success;
  const types = PROBES.filter(([, samples]) => samples.some(accepts)).map(([type]) => type);
  if (!types.length) throw new UnsupportedSchema('a v.custom that accepts no JSON value');
  const out: Record<string, unknown> =
    types.length === PROBES.length ? {} : { type: types.length === 1 ? types[0] : types };
  if (typeof schema.message === 'string') out.description = schema.message;
  return out as JsonSchema;
}

const CONVERSION: ConversionConfig = {
  target: 'draft-2020-12',
  typeMode: 'input',
  errorMode: 'throw',
  overrideSchema: ({ valibotSchema }) =>
    valibotSchema.type === 'custom' ? customJsonSchema(valibotSchema as unknown as Node) : undefined,
};

const isObject = (x: unknown): x is JsonObject => typeof x === 'object' && x !== null && !Array.isArray(x);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Drops what an embedded schema does not need and merges allOf members that do not clash. */
function tidy(node: Json): Json {
  if (Array.isArray(node)) return node.map(tidy);
  if (!isObject(node)) return node;
  let out: JsonObject = {};
  for (const [k, val] of Object.entries(node)) {
    if (k === 'properties' && isObject(val)) {
      // Property names, not keywords: each value is a schema.
      out[k] = Object.fromEntries(Object.entries(val).map(([name, schema]) => [name, tidy(schema)]));
      continue;
    }
    if (k === 'default' || k === 'enum' || k === 'const' || k === 'examples') {
      out[k] = val;
      continue;
    }
    if (k === '$schema') continue;
    if (k === '$defs') throw new UnsupportedSchema('recursive schemas ($defs) are not supported in the document yet');
    if (k === 'required' && Array.isArray(val) && val.length === 0) continue;
    out[k] = tidy(val);
  }
  const all = out.allOf;
  if (Array.isArray(all) && all.every(isObject)) {
    const { allOf: _, ...rest } = out;
    const merged: JsonObject = {};
    let clash = false;
    for (const part of [...all, rest] as JsonObject[]) {
      for (const [k, val] of Object.entries(part)) {
        if (k in merged && !same(merged[k], val)) clash = true;
        merged[k] = val;
      }
    }
    if (!clash) out = merged;
  }
  return out;
}

/** The JSON Schema of what a client may send for `schema` (see the header for the rules). */
export function inputJsonSchema(schema: v.GenericSchema<unknown, unknown>): JsonObject {
  const converted = toJsonSchema(inputView(schema as unknown as Node) as unknown as v.GenericSchema, CONVERSION);
  return tidy(converted as unknown as Json) as JsonObject;
}

// ------------------------------------------------------------------------------------------------
// The document
// ------------------------------------------------------------------------------------------------

const ERROR_RESPONSES: Record<number, [name: string, description: string]> = {
  400: [
    'BadRequest',
    'Invalid request: `validation_error` with the offending field in `attr`, or `parse_error` for a body that is not JSON.',
  ],
  401: ['Unauthorized', 'No key, or an unknown, revoked or expired one (`authentication_error`).'],
  403: [
    'Forbidden',
    "The key lacks the operation's scope (`API key missing required scope 'x:y'`), or is limited to other organizations or projects.",
  ],
  404: ['NotFound', 'No such resource, or one the caller cannot see (other tenants answer 404 too).'],
  405: ['MethodNotAllowed', 'The path exists but not with this method; `Allow` lists the methods it has.'],
  413: ['PayloadTooLarge', 'The request body is too large.'],
  415: ['UnsupportedMediaType', 'The body is not JSON (`Content-Type: application/json`).'],
  429: ['Throttled', 'Too many requests: retry after `Retry-After` seconds.'],
  500: ['ServerError', 'An unexpected error (no internals in the body).'],
  503: ['ServiceUnavailable', 'A dependency is momentarily unavailable: retry after `Retry-After` seconds.'],
};

/** Success statuses that do not follow from the method (DELETE answers 204, `*_create` 201, the rest 200). */
const SUCCESS_STATUS: Record<string, number> = {
  persons_bulk_delete: 202,
  // PostHog's 202 with no body: the change is accepted (events deleted on Sunday, a distinct id freed).
  persons_update_property: 202,
  persons_delete_events: 202,
  persons_reset_person_distinct_id: 202,
  query_create: 200,
  query_destroy: 200,
  batch_exports_runs_retry: 201,
};

/** Operations whose success has no body (PostHog answers these 202s empty). */
const NO_BODY = new Set(['persons_update_property', 'persons_delete_events', 'persons_reset_person_distinct_id']);

/** Lists paged by an opaque cursor as PostHog's CursorPagination: no `count`. */
const CURSOR_LISTS = new Set(['batch_exports_backfills_list', 'batch_exports_runs_list', 'groups_list']);

/** The route-table operation an entry documents (an alias entry's is the original's). */
const operationOf = (route: OpenApiRoute) => route.aliasOf?.operationId ?? route.operationId;

function successStatus(route: OpenApiRoute): number {
  const operationId = operationOf(route);
  if (SUCCESS_STATUS[operationId]) return SUCCESS_STATUS[operationId]!;
  if (route.method === 'DELETE') return 204;
  if (route.method === 'POST' && operationId.endsWith('_create')) return 201;
  return 200;
}

const successDescription: Record<number, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No content' };

/** Capture's payload, as the SDKs send it; the handler decodes it itself (JSON, form, gzip, base64). */
const captureEvent: JsonObject = {
  type: 'object',
  required: ['event'],
  properties: {
    event: { type: 'string', minLength: 1 },
    distinct_id: {
      description: 'Or `properties.distinct_id`; non-strings are stringified, and cut to 200 characters.',
    },
    properties: {
      type: ['object', 'null'],
      description: 'May carry `$set`, `$set_once`, `$unset` and (posthog-js) the project token as `token`.',
    },
    timestamp: { type: 'string' },
    uuid: { type: 'string' },
    api_key: { type: 'string', description: 'The project token (`phc_...`); `token` and `$token` are read too.' },
    token: { type: 'string' },
  },
};

interface HandDocumented {
  description: string;
  requestBody?: JsonObject;
  response: JsonObject;
  /** The success body's media type when it is not JSON (the SDK's scripts). */
  contentType?: string;
  errors: number[];
}

/** What /flags and /decide accept: posthog-js's body, as JSON or in any encoding capture takes. */
const flagsRequestBody: JsonObject = {
  required: false,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        properties: {
          token: {
            type: 'string',
            description: 'The project token (`phc_...`); `api_key` is read too, else the `token` query parameter.',
          },
          distinct_id: { type: 'string' },
          groups: { type: 'object' },
          person_properties: { type: 'object' },
        },
      },
    },
    'text/plain': {
      schema: { type: 'string', description: 'gzip (`?compression=gzip-js`) or base64, as posthog-js sends it.' },
    },
    'application/x-www-form-urlencoded': {
      schema: { type: 'object', properties: { data: { type: 'string' }, compression: { type: 'string' } } },
    },
  },
};

const noFlagsResponse: JsonObject = {
  type: 'object',
  required: ['flags', 'featureFlags', 'featureFlagPayloads', 'errorsWhileComputingFlags', 'quotaLimited', 'requestId'],
  properties: {
    flags: { type: 'object', description: 'Always empty: this service has no feature flags.' },
    featureFlags: { type: ['object', 'array'] },
    featureFlagPayloads: { type: 'object' },
    errorsWhileComputingFlags: { const: false },
    quotaLimited: { type: 'array', items: { type: 'string' } },
    requestId: { type: 'string', format: 'uuid' },
    evaluatedAt: { type: 'integer' },
  },
};

const remoteConfigResponse: JsonObject = {
  type: 'object',
  required: [
    'token',
    'supportedCompression',
    'autocapture_opt_out',
    'sessionRecording',
    'surveys',
    'hasFeatureFlags',
    'siteApps',
  ],
  properties: {
    token: { type: 'string' },
    supportedCompression: { type: 'array', items: { type: 'string' } },
    hasFeatureFlags: { const: false },
    autocapture_opt_out: {
      type: 'boolean',
      description: "The project's setting (PATCH the project); false turns posthog-js autocapture on.",
    },
    capturePerformance: { const: false },
    analytics: { type: 'object', properties: { endpoint: { type: 'string' } } },
    elementsChainAsString: { const: true },
    sessionRecording: { const: false },
    heatmaps: { const: false },
    surveys: { const: false },
    defaultIdentifiedOnly: { type: 'boolean' },
    siteApps: { type: 'array', maxItems: 0 },
  },
};

/** A script for the browser: 404 when there is none to serve. */
const browserScript: Pick<HandDocumented, 'response' | 'contentType' | 'errors'> = {
  response: { type: 'string' },
  contentType: 'application/javascript',
  errors: [404, 500],
};

/**
 * Operations whose handler validates no valibot schema (publicHandler hands the raw request to the
 * domain): described here by hand. The generator fails on a public operation missing from this list.
 */
export const HAND_DOCUMENTED: Record<string, HandDocumented> = {
  capture: {
    description:
      'PostHog SDK ingestion. No personal API key: the project token (`phc_...`) authenticates the request and goes in the payload ' +
      '(`api_key` or `token` of a batch, of each event, or `properties.token`), or in the `token`/`api_key` query parameter. ' +
      'Accepts one event, a list of events, or a batch `{api_key, batch, sent_at?, historical_migration?}`; as JSON, as a form field `data=`, ' +
      'gzip (`Content-Encoding: gzip` or `?compression=gzip-js`), base64 or lz64 (`?compression=lz64`). Each event is accepted or rejected on its own.',
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            anyOf: [
              { $ref: '#/components/schemas/CaptureEvent' },
              { type: 'array', items: { $ref: '#/components/schemas/CaptureEvent' } },
              {
                type: 'object',
                required: ['batch'],
                properties: {
                  api_key: { type: 'string' },
                  token: { type: 'string' },
                  batch: { type: 'array', items: { $ref: '#/components/schemas/CaptureEvent' } },
                  sent_at: { type: 'string' },
                  historical_migration: { type: 'boolean' },
                },
              },
            ],
          },
        },
        'application/x-www-form-urlencoded': {
          schema: { type: 'object', properties: { data: { type: 'string' }, compression: { type: 'string' } } },
        },
        'text/plain': { schema: { type: 'string' } },
      },
    },
    response: {
      type: 'object',
      required: ['status'],
      properties: {
        status: { const: 1 },
        accepted: { type: 'integer' },
        deduplicated: { type: 'integer' },
        rejected: { type: 'integer' },
        errors: {
          type: 'array',
          items: { type: 'object', properties: { index: { type: 'integer' }, reason: { type: 'string' } } },
        },
        queued: {
          type: 'integer',
          description:
            'Events staged for storage by a worker (a batch over 500 events, or the rest of one near its deadline): durable, stored within seconds, a uuid already stored skipped. Absent when 0.',
        },
      },
    },
    errors: [400, 401, 413, 429, 500, 503],
  },
  schema: {
    description: "This document. Public, like PostHog's `/api/schema/`: no key and no token.",
    response: {
      type: 'object',
      required: ['openapi', 'info', 'paths'],
      properties: {
        openapi: { type: 'string' },
        info: { type: 'object' },
        paths: { type: 'object' },
        components: { type: 'object' },
      },
    },
    errors: [429, 500],
  },
  sdk_remote_config: {
    description:
      'What posthog-js loads at `init` (`api_host` + `/array/<token>/config`): the remote config of the project the token names. ' +
      'CORS `*` and `Cache-Control: public, max-age=300`; 404 for a token that names no project.',
    response: remoteConfigResponse,
    errors: [404, 500],
  },
  sdk_remote_config_js: {
    description:
      'The remote config as a script that sets `window._POSTHOG_REMOTE_CONFIG[<token>] = {config, siteApps: []}`, which posthog-js loads ' +
      'first (a cross-origin script). CORS `*`; 404 for a token that names no project.',
    ...browserScript,
  },
  sdk_flags: {
    description:
      "posthog-js's feature-flag request (`/flags/?v=2`). This service has no feature flags: the answer is always none, never an error " +
      'for a valid token. With `config=true` the remote config comes with it. 401 for a missing or unknown token.',
    requestBody: flagsRequestBody,
    response: noFlagsResponse,
    errors: [400, 401, 413, 500],
  },
  sdk_decide: {
    description:
      'The legacy `/decide/?v=3|4` of older SDKs: no flags, plus the remote config they read from it (`config.enable_collect_everything`, ' +
      '`toolbarParams`, `isAuthenticated`, ...). Before `v=2`, `featureFlags` is a list. 401 for a missing or unknown token.',
    requestBody: flagsRequestBody,
    response: { allOf: [noFlagsResponse, remoteConfigResponse] },
    errors: [400, 401, 413, 500],
  },
  sdk_static: {
    description:
      'A browser bundle of the pinned posthog-js (`array.js` for the snippet, `array.full.js`, and the extensions the SDK loads lazily as ' +
      "`/static/<name>.js?v=<version>`). Only scripts listed in the package's `dist/` folder; anything else is 404. CORS `*`, cached a day.",
    ...browserScript,
  },
  sdk_static_versioned: {
    description:
      'The same bundles at `/static/<version>/<name>.js` (posthog-js `strict_script_versioning`); another version than the pinned one is 404. Cached a year.',
    ...browserScript,
  },
  console_index: {
    description:
      'The web console (HTML). It signs in with a personal API key kept in the tab and calls only this API. Strict CSP ' +
      "(`script-src 'self'`, `frame-ancestors 'none'`), not cached. 404 where the console was not built.",
    response: { type: 'string' },
    contentType: 'text/html',
    errors: [404, 500],
  },
  console_asset: {
    description:
      "The console's `app.js` and `app.css` under their content version: any other version or name is 404. Cached a year, immutable.",
    ...browserScript,
  },
};

/** The resource the operation is about: the first literal segment after the tenant (`persons`), else the first one. */
function tagOf(route: OpenApiRoute): string {
  const path = route.aliasOf?.path ?? route.path;
  const segments = path.split('/').filter(Boolean);
  if (segments[0] !== 'api')
    return route.operationId.startsWith('sdk_')
      ? 'sdk'
      : route.operationId.startsWith('console_')
        ? 'console'
        : 'capture';
  const afterTenant = segments.slice(2).find((s) => !s.startsWith(':'));
  return tenancyOf(path).kind === 'project' && afterTenant ? afterTenant : segments[1]!;
}

/** The tenant segment is checked by the auth step (404 when malformed), not by a valibot schema. */
function tenantParamSchema(route: OpenApiRoute, name: string): JsonObject | undefined {
  const tenancy = tenancyOf(route.path);
  if (tenancy.kind === 'project' && tenancy.param === name)
    return { type: 'string', pattern: '^\\d{1,15}$', description: 'Project (environment) id.' };
  if (tenancy.kind === 'organization' && tenancy.param === name)
    return { type: 'string', format: 'uuid', description: 'Organization id.' };
  return undefined;
}

/** `inputJsonSchema`, with the operation and request part in the error. */
function convert(route: OpenApiRoute, part: keyof Schemas, schema: v.GenericSchema<unknown, unknown>): JsonObject {
  try {
    return inputJsonSchema(schema);
  } catch (error) {
    throw new Error(`${route.operationId} ${part}: ${(error as Error).message}`, { cause: error });
  }
}

/** Moves a schema's description up to the parameter, where OpenAPI tools show it. */
function parameter(name: string, where: 'path' | 'query', required: boolean, schema: JsonObject): JsonObject {
  const { description, ...rest } = schema;
  return { name, in: where, required, ...(typeof description === 'string' ? { description } : {}), schema: rest };
}

function parametersOf(entry: OpenApiEntry): JsonObject[] {
  const { route, schemas } = entry;
  const out: JsonObject[] = [];
  const names = pathParamNames(route.path);
  const params = schemas.params ? convert(route, 'params', schemas.params) : undefined;
  const paramProps = (params?.properties ?? {}) as JsonObject;
  for (const key of Object.keys(paramProps)) {
    if (!names.includes(key))
      throw new Error(`${route.operationId}: params schema names "${key}", which is not in ${route.path}`);
  }
  for (const name of names) {
    const schema = (paramProps[name] as JsonObject | undefined) ?? tenantParamSchema(route, name) ?? { type: 'string' };
    out.push(parameter(name, 'path', true, schema));
  }
  if (schemas.query) {
    const query = convert(route, 'query', schemas.query);
    const required = new Set((query.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((query.properties ?? {}) as JsonObject))
      out.push(parameter(name, 'query', required.has(name), schema as JsonObject));
    if (isObject(query.additionalProperties)) {
      // A record of query parameters (the trend GET): any name, each value a string.
      out.push({
        name: 'parameters',
        in: 'query',
        required: false,
        description: 'Any query parameters, each a string (structured values JSON-encoded).',
        style: 'form',
        explode: true,
        schema: { type: 'object', additionalProperties: query.additionalProperties },
      });
    }
  }
  if (route.csv) {
    if (out.some((p) => p.in === 'query' && p.name === 'format'))
      throw new Error(`${route.operationId}: "format" is both a CSV switch and a query field`);
    out.push({
      name: 'format',
      in: 'query',
      required: false,
      description: 'Response format.',
      schema: { type: 'string', enum: ['json', 'csv'], default: 'json' },
    });
  }
  return out;
}

function responsesOf(
  route: OpenApiRoute,
  errors: number[],
  success: { status: number; schema?: JsonObject; contentType?: string },
): JsonObject {
  const content: JsonObject = {};
  if (success.status !== 204 && !NO_BODY.has(operationOf(route))) {
    content[success.contentType ?? 'application/json'] = { schema: success.schema ?? { type: 'object' } };
    if (route.csv) content['text/csv'] = { schema: { type: 'string' } };
  }
  const responses: JsonObject = {
    [String(success.status)]: {
      description: successDescription[success.status] ?? 'OK',
      ...(Object.keys(content).length ? { content } : {}),
    },
  };
  for (const status of errors)
    responses[String(status)] = { $ref: `#/components/responses/${ERROR_RESPONSES[status]![0]}` };
  return responses;
}

const nonEmpty = (key: string, list: JsonObject[]): JsonObject => (list.length ? { [key]: list } : {});

/** Successful answers that are neither an object nor a counted page (PostHog's shapes for these operations). */
const RESPONSE_SHAPES: Record<string, JsonObject> = {
  groups_types_list: { type: 'array', items: { type: 'object' } },
  groups_types_update_metadata: { type: 'array', items: { type: 'object' } },
};

function keyOperation(entry: OpenApiEntry): JsonObject {
  const { route, schemas } = entry;
  const body = schemas.body ? convert(route, 'body', schemas.body) : undefined;
  const hasParams = pathParamNames(route.path).length > 0;
  const errors = [
    ...(schemas.params || schemas.query || schemas.body || route.csv ? [400] : []),
    401,
    403,
    ...(hasParams ? [404] : []),
    ...(body ? [413, 415] : []),
    429,
    500,
    503,
  ];
  const list = route.method === 'GET' && operationOf(route).endsWith('_list');
  const shape =
    RESPONSE_SHAPES[operationOf(route)] ??
    (list
      ? { $ref: `#/components/schemas/${CURSOR_LISTS.has(operationOf(route)) ? 'CursorPage' : 'Page'}` }
      : undefined);
  const description = [
    ...(route.aliasOf
      ? [`The same operation as \`${route.aliasOf.operationId}\` (\`${bracedPath(route.aliasOf.path)}\`).`]
      : []),
    ...(route.csv ? ['Answers CSV instead of JSON with `format=csv`.'] : []),
  ].join(' ');
  return {
    operationId: route.operationId,
    summary: route.summary,
    tags: [tagOf(route)],
    ...(description ? { description } : {}),
    ...nonEmpty('parameters', parametersOf(entry)),
    ...(body
      ? {
          requestBody: {
            required: Array.isArray(body.required) && body.required.length > 0,
            content: { 'application/json': { schema: body } },
          },
        }
      : {}),
    responses: responsesOf(route, errors, {
      status: successStatus(route),
      ...(shape ? { schema: shape } : {}),
    }),
    security: [route.scope!, ...(route.alsoAccepts ?? [])].flatMap((s): JsonObject[] => [
      { personalApiKey: [s] },
      { personalApiKeyQuery: [s] },
    ]),
  };
}

function publicOperation(entry: OpenApiEntry): JsonObject {
  const { route, schemas } = entry;
  const doc = HAND_DOCUMENTED[route.operationId];
  if (!doc)
    throw new Error(
      `${route.operationId} has no valibot schemas to document it: describe it in HAND_DOCUMENTED (infra/openapi/document.ts)`,
    );
  if (schemas.params || schemas.query || schemas.body)
    throw new Error(
      `${route.operationId}: a public operation with valibot schemas should be generated, not hand-documented`,
    );
  const aliases = route.aliases?.length ? ` Also served at ${route.aliases.map((a) => `\`${a}\``).join(', ')}.` : '';
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: doc.description + aliases,
    tags: [tagOf(route)],
    ...nonEmpty('parameters', parametersOf(entry)),
    ...(doc.requestBody ? { requestBody: doc.requestBody } : {}),
    responses: responsesOf(route, doc.errors, {
      status: successStatus(route),
      schema: doc.response,
      contentType: doc.contentType,
    }),
    security: [],
  };
}

const scopeList = SCOPE_OBJECTS.map((o) => `\`${o}:read\`, \`${o}:write\``).join(', ');

const DESCRIPTION = [
  'A PostHog-compatible product-analytics API.',
  '',
  'Every path is also served with a trailing slash (`/api/organizations/` and `/api/organizations` are the same operation); the document lists the form without it.',
  'Errors have one shape, `Error` (`{type, code, detail, attr}`), as PostHog answers them; a known path called with another method answers 405 with `Allow`.',
  'Lists answer `{count, next, previous, results}` with `limit` (default 100) and `offset`; `next`/`previous` are absolute URLs.',
  'Authenticate with a personal API key: `Authorization: Bearer phx_...` (or the `personal_api_key` query parameter). Each operation names the scope it needs.',
  'Capture endpoints take the project token in the payload instead; `/api/schema` is public.',
  'Every `/api/environments/{project_id}...` path is also served at `/api/projects/{project_id}...`, as PostHog serves both: the same operation, documented again there under its operationId prefixed with `projects_`.',
  'The `sdk` operations answer what posthog-js fetches from its `api_host` besides capture: remote config, (no) feature flags and its own scripts.',
].join('\n');

const isPublic = (route: OpenApiRoute) => route.auth === 'project_token' || route.auth === 'public';

/** One path item per route path, keyed by its braced form, each method documented once. */
function operationPaths(entries: readonly OpenApiEntry[]): Record<string, JsonObject> {
  const paths: Record<string, JsonObject> = {};
  for (const entry of entries) {
    const { path, method } = entry.route;
    const item = (paths[bracedPath(path)] ??= {});
    const key = method.toLowerCase();
    if (key in item) throw new Error(`${method} ${path} is documented twice`);
    item[key] = isPublic(entry.route) ? publicOperation(entry) : keyOperation(entry);
  }
  return paths;
}

/** Alias paths point at the path item of their operation: one operationId, several paths. */
function addAliasPaths(paths: Record<string, JsonObject>, entries: readonly OpenApiEntry[]): void {
  for (const { route } of entries) {
    for (const alias of route.aliases ?? []) {
      if (paths[bracedPath(alias)])
        throw new Error(`alias ${alias} of ${route.operationId} also has its own operations`);
      const others = entries.filter((e) => e.route.path === route.path && e.route !== route);
      if (others.length)
        throw new Error(`alias ${alias}: ${route.path} has other operations, which the alias would inherit`);
      paths[bracedPath(alias)] = {
        $ref: `#/paths/${bracedPath(route.path).replaceAll('~', '~0').replaceAll('/', '~1')}`,
      };
    }
  }
}

const sortedByPath = (paths: Record<string, JsonObject>) =>
  Object.fromEntries(Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

function componentSchemas(): JsonObject {
  return {
    Error: {
      type: 'object',
      required: ['type', 'code', 'detail', 'attr'],
      properties: {
        type: {
          type: 'string',
          enum: ['validation_error', 'authentication_error', 'invalid_request', 'throttled_error', 'server_error'],
        },
        code: { type: 'string' },
        detail: { type: 'string' },
        attr: {
          type: ['string', 'null'],
          description: 'The field at fault (nested fields joined with `__`), or null.',
        },
      },
    },
    Page: {
      type: 'object',
      required: ['count', 'next', 'previous', 'results'],
      properties: {
        count: { type: 'integer', minimum: 0 },
        next: { type: ['string', 'null'], format: 'uri' },
        previous: { type: ['string', 'null'], format: 'uri' },
        results: { type: 'array', items: { type: 'object' } },
      },
    },
    CursorPage: {
      type: 'object',
      required: ['next', 'previous', 'results'],
      description: "DRF's CursorPagination: `next` carries an opaque `cursor`.",
      properties: {
        next: { type: ['string', 'null'], format: 'uri' },
        previous: { type: ['string', 'null'], format: 'uri' },
        results: { type: 'array', items: { type: 'object' } },
      },
    },
    CaptureEvent: captureEvent,
  };
}

function errorResponses(): JsonObject {
  return Object.fromEntries(
    Object.values(ERROR_RESPONSES).map(([name, description]) => [
      name,
      { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    ]),
  );
}

function securitySchemes(): JsonObject {
  return {
    personalApiKey: {
      type: 'http',
      scheme: 'bearer',
      description:
        'A personal API key (`phx_...`) as `Authorization: Bearer <key>`. An operation lists the one scope it needs; a key carrying ' +
        '`x:write` also has `x:read`, and `*` has every scope. A key may further be limited to some organizations or projects. ' +
        `Scopes: ${scopeList}.`,
    },
    personalApiKeyQuery: {
      type: 'apiKey',
      in: 'query',
      name: 'personal_api_key',
      description: 'The same personal API key in the query string (the header wins when both are sent).',
    },
  };
}

/** The OpenAPI 3.1 document for `entries` (one per route-table row, with the schemas its handler validates). */
export function buildOpenApi(entries: readonly OpenApiEntry[], info: OpenApiInfo): OpenApiDocument {
  const paths = operationPaths(entries);
  addAliasPaths(paths, entries);
  const tags = [...new Set(entries.map((e) => tagOf(e.route)))].sort().map((name) => ({ name }));
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description ?? DESCRIPTION },
    tags,
    paths: sortedByPath(paths),
    components: { schemas: componentSchemas(), responses: errorResponses(), securitySchemes: securitySchemes() },
  };
}

/** How the document is written to docs/openapi.json (and compared with it). */
export const serializeOpenApi = (document: OpenApiDocument) => `${JSON.stringify(document, null, 2)}\n`;
