import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import type { Route } from '#functions/routes.ts';
import { hogqlText } from './hogql-arbitrary.ts';
import { validBatchExportBody } from './batch-export.ts';

/**
 * fast-check arbitraries for hostile HTTP requests against any row of the route table: wrong types,
 * huge strings, deep nesting, unicode (lone surrogates included), prototype-pollution keys, bad
 * UUIDs and integers, bad query values, bad JSON, wrong content types and encodings. Each request
 * targets the tenant's real resources often enough to get past auth and into the handlers.
 */
export interface FuzzTargets {
  /** `Authorization: Bearer` value of a key with `*` on the tenant. */
  key: string;
  organizationId: string;
  projectId: number;
  personIds: number[];
  distinctIds: string[];
  actionId: number;
  exportId: string;
  /** Token of the project capture requests may write to. */
  captureToken: string;
}

export interface FuzzRequest {
  route: Route;
  method: string;
  /** Path and query string, already encoded. */
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** For reports: what the body was before encoding (truncated). */
  describe: string;
  /** The path names the tenant's own organization or project (its last `:id` may still name anything), so tenancy lets it through to the operation's code. */
  ownTenant: boolean;
}

export const PROTO_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  'isPrototypeOf',
];

/** Field names the routes read, so fuzzed objects often hit real fields with wrong values. */
const FIELDS = [
  'name',
  'properties',
  'steps',
  'events',
  'actions',
  'destination',
  'config',
  'type',
  'interval',
  'paused',
  'start_at',
  'end_at',
  'hogql_query',
  'filters',
  'team_id',
  'model',
  'ids',
  'distinct_ids',
  'delete_events',
  '$unset',
  'main_distinct_id',
  'timezone',
  'week_start_day',
  'test_account_filters',
  'logo_media_id',
  'is_member_join_email_enabled',
  'enforce_2fa',
  'description',
  'event',
  'id',
  'math',
  'math_property',
  'date_from',
  'date_to',
  'breakdown',
  'breakdown_type',
  'compare',
  'formula',
  'display',
  'bucket_name',
  'region',
  'prefix',
  'compression',
  'file_format',
  'endpoint_url',
  'include_events',
  'exclude_events',
  'aws_access_key_id',
  'aws_secret_access_key',
  'role_arn',
  'api_key',
  'token',
  'batch',
  'distinct_id',
  'uuid',
  'timestamp',
  '$set',
  '$set_once',
  'sent_at',
  'data',
  'email',
  'offset',
  'limit',
  'key',
  'value',
  'operator',
];

const SPECIAL_STRINGS = [
  '',
  ' ',
  '\u0000',
  '\u0000\u0001\u001f',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-1',
  '0',
  '1e309',
  '9'.repeat(30),
  '💥🚀',
  '\u202e\u0301',
  '\ud800',
  '\udfff\ud800',
  'Ω≈ç√∫',
  'ﷺ',
  '𝕳𝖊𝖑𝖑𝖔',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as a literal string.
  '${process.exit(1)}',
  '../../etc/passwd',
  '%00',
  '%ZZ',
  'true',
  'false',
  '[]',
  '{}',
  '{"a":',
  'hour',
  'day',
  'S3',
  'csv',
  'events',
  'persons',
  '2024-01-01T00:00:00Z',
  '2024-13-45T25:61:61Z',
  '-1d',
  '-100000000y',
  // Relative and absolute dates whose instant is not finite or out of range (issue 21, item 5).
  '-999999y',
  '+999999d',
  '9999999-01-01',
  '-1e309h',
  'all',
  '0000-00-00',
  '2024-01-01',
  'total',
  'dau',
  'sum',
  'ActionsLineGraph',
  '$pageview',
  'ORG#x',
  'PERSON#1#1',
  'sha256$',
  'phx_',
  'phc_',
  ...PROTO_KEYS,
];

const UUIDS = [
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  'not-a-uuid',
  '1234',
];

/** Below and past the limits that matter: DynamoDB's 400 KB item, the 1 MiB body (and 30 KB, stored wherever it is allowed). */
const hugeString = fc
  .tuple(
    fc.constantFrom('a', 'é', '😀', '\u0000', '"', '\\', '\ud800'),
    fc.oneof(
      { weight: 4, arbitrary: fc.constant(5_000) },
      { weight: 3, arbitrary: fc.constant(30_000) },
      { weight: 2, arbitrary: fc.constant(420_000) },
      { weight: 1, arbitrary: fc.constant(1_100_000) },
    ),
  )
  .map(([c, n]) => c.repeat(Math.ceil(n / c.length)));

export const fuzzString: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_STRINGS, ...UUIDS) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 200, maxLength: 2000 }) },
);

const fuzzNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, -1, 2 ** 31, 2 ** 53, 2 ** 53 + 2, 1e21, 1.5, Number.MAX_VALUE, Number.MIN_VALUE, -1e300),
);

const leaf = fc.oneof(
  { weight: 4, arbitrary: fuzzString },
  { weight: 2, arbitrary: fuzzNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
);

const fuzzKey = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...FIELDS) },
  { weight: 2, arbitrary: fc.constantFrom(...PROTO_KEYS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
);

/** An object whose keys are own properties even when they are `__proto__`. */
function objectOf(entries: [string, unknown][]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, value] of entries)
    Object.defineProperty(o, k, { value, enumerable: true, writable: true, configurable: true });
  return o;
}

const { value: fuzzValue } = fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>(
  (tie) => ({
    value: fc.oneof({ depthSize: 'small', maxDepth: 4 }, leaf, tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 4 }),
    object: fc.array(fc.tuple(fuzzKey, tie('value')), { maxLength: 5 }).map(objectOf),
  }),
);
export { fuzzValue };

export const fuzzObject = fc.array(fc.tuple(fuzzKey, fuzzValue), { maxLength: 6 }).map(objectOf);

/** JSON text nested `depth` levels (objects or arrays), for parsers, validators and DynamoDB's 32-level limit. */
const deepJson = fc
  .tuple(fc.constantFrom(5, 31, 33, 64, 500, 5_000, 50_000), fc.constantFrom('object', 'array', '__proto__'))
  .map(([depth, kind]) => {
    const [open, close] = kind === 'array' ? ['[', ']'] : kind === 'object' ? ['{"a":', '}'] : ['{"__proto__":', '}'];
    return `${open.repeat(depth)}1${close.repeat(depth)}`;
  });

const BAD_JSON = [
  '{',
  '{"name": }',
  '{"name": "x",}',
  "{'name': 'x'}",
  '{"name": "x"} trailing',
  'NaN',
  '{"a": NaN}',
  '\uFEFF{"name":"bom"}',
  '{"name":"\\ud800"}',
  '{"a":1,"a":2}',
  '\u0000',
  '{"name": "x"\u0000}',
  '[1,2',
  '"unterminated',
  '{"__proto__": {"polluted": true}}',
  '{"constructor": {"prototype": {"polluted": true}}}',
];

/** A valid request body per operation: mutating it keeps most fields valid, so the handler's own checks run. */
function baseBody(route: Route, t: FuzzTargets): Record<string, unknown> | undefined {
  const bodies: Record<string, Record<string, unknown>> = {
    organizations_create: { name: 'Fuzzed org' },
    organizations_partial_update: { name: 'Fuzzed', enforce_2fa: false },
    persons_partial_update: { properties: { fuzz: 1 } },
    persons_split: { main_distinct_id: t.distinctIds[0] },
    persons_delete_property: { $unset: 'fuzz' },
    persons_bulk_delete: { distinct_ids: ['nobody-has-this-id'] },
    projects_partial_update: { name: 'Renamed', timezone: 'Europe/Paris', week_start_day: 1, test_account_filters: [] },
    actions_create: { name: 'Signups', steps: [{ event: 'signed up', properties: [] }] },
    actions_partial_update: { name: 'Renamed', steps: [{ event: 'x' }] },
    // The fixture stores a catastrophic regex in the action and the test-account filters: the valid body meets both.
    insights_trend: {
      events: [
        { id: '$pageview', math: 'total', properties: [{ key: 'hostile', value: '^(a+)+$', operator: 'regex' }] },
      ],
      actions: [{ id: t.actionId }],
      filter_test_accounts: true,
      interval: 'day',
      date_from: '-7d',
      breakdown: "concat(properties.$os, ' ', properties.$browser)",
      breakdown_type: 'hogql',
    },
    batch_exports_create: validBatchExportBody(),
    batch_exports_partial_update: { name: 'Renamed', paused: true },
    batch_exports_backfill: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-01-01T02:00:00Z' },
    capture: {
      api_key: t.captureToken,
      batch: [{ event: 'fuzz', distinct_id: 'fuzzer', properties: { $set: { a: 1 } } }],
    },
  };
  return bodies[route.operationId];
}

/** Every path to a value inside a JSON value (`[]` is the root). */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) for (const [i, v] of value.entries()) out.push(...pathsOf(v, [...prefix, i]));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  // A key that is not an index (`length`, `__proto__`) turns an array into an object holding its items.
  const asArray = Array.isArray(root) && typeof head === 'number';
  const copy: any = asArray ? [...(root as unknown[])] : objectOf(Object.entries((root ?? {}) as object));
  Object.defineProperty(copy, head!, {
    value: setAt(copy[head!], rest, value),
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return copy;
}

const PLACEHOLDER = '\u0001__FUZZ_PLACEHOLDER__\u0001';

/** A body: the route's valid body with 1-3 values replaced (or keys added), something random, or broken bytes. */
/** The query API's kinds, each a valid body the fuzz then mutates: one of them is drawn per request. */
function queryBodies(t: FuzzTargets): Record<string, unknown>[] {
  return [
    {
      query: {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: '$pageview', math: 'dau' }],
        dateRange: { date_from: '-7d' },
        interval: 'day',
        breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
        properties: [{ key: 'hostile', value: '^(a+)+$', operator: 'regex', type: 'event' }],
        filterTestAccounts: true,
      },
      refresh: 'blocking',
    },
    {
      query: {
        kind: 'ActorsQuery',
        select: ['id', 'properties.email', 'distinct_ids'],
        orderBy: ['properties.email DESC'],
        search: t.distinctIds[0],
        limit: 10,
      },
      refresh: 'force_cache',
    },
    {
      query: {
        kind: 'EventsQuery',
        select: ['*', 'event', 'timestamp', 'count()'],
        after: '-30d',
        before: 'now',
        orderBy: ['timestamp DESC'],
        properties: [{ key: 'hostile', value: '^(a+)+$', operator: 'regex', type: 'event' }],
        limit: 50,
      },
      refresh: 'force_async',
      client_query_id: 'fuzz-query',
    },
    {
      query: {
        kind: 'TrendsQuery',
        series: [
          { kind: 'EventsNode', event: '$pageview', math: 'hogql', math_hogql: 'avg(toFloat(properties.price))' },
        ],
        dateRange: { date_from: '-7d' },
        breakdownFilter: { breakdown: "concat(properties.$os, ' ', properties.$browser)", breakdown_type: 'hogql' },
        properties: [{ type: 'hogql', key: "properties.$current_url ILIKE '%/pricing%'" }],
      },
      refresh: 'blocking',
    },
    {
      query: {
        kind: 'EventsQuery',
        select: ['event', 'toHour(timestamp) AS hour', 'count() -- Total', 'avg(toFloat(properties.price))'],
        where: ['toHour(timestamp) >= 9', "properties.hostile =~ '^(a+)+$'"],
        orderBy: ['count() DESC', 'hour ASC'],
        after: '-30d',
      },
      refresh: 'blocking',
    },
  ];
}

/** Where a body holds HogQL text: the fuzz puts random expressions there. */
function expressionPaths(body: Record<string, unknown>): (string | number)[][] {
  const named = new Set(['breakdown', 'math_hogql', 'select', 'where', 'orderBy', 'key']);
  return pathsOf(body).filter(
    (p) => p.some((k) => typeof k === 'string' && named.has(k)) && typeof p.at(-1) !== 'undefined',
  );
}

function bodyArbitrary(route: Route, t: FuzzTargets): fc.Arbitrary<{ text?: string; note: string }> {
  if (route.operationId === 'query_create')
    return fc.constantFrom(...queryBodies(t)).chain((base) => mutatedBodies(base));
  return mutatedBodies(baseBody(route, t) ?? {});
}

function mutatedBodies(base: Record<string, unknown>): fc.Arbitrary<{ text?: string; note: string }> {
  const paths = pathsOf(base);
  const hogqlPaths = expressionPaths(base);
  const expressions = hogqlPaths.length
    ? fc.array(fc.tuple(fc.constantFrom(...hogqlPaths), hogqlText), { minLength: 1, maxLength: 2 }).map((edits) => {
        let body: unknown = base;
        for (const [p, v] of edits) body = setAt(body, p, v);
        return { text: JSON.stringify(body), note: 'hogql' };
      })
    : fc.constant({ text: JSON.stringify(base), note: 'valid' });
  const mutated = fc
    .array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom(...paths),
          fc.tuple(fc.constantFrom(...paths), fuzzKey).map(([p, k]) => [...p, k]),
        ),
        fc.oneof({ weight: 30, arbitrary: fuzzValue }, { weight: 1, arbitrary: hugeString }),
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((edits) => {
      let body: unknown = base;
      for (const [p, v] of edits) body = setAt(body, p, v);
      return { text: JSON.stringify(body), note: 'mutated' };
    });
  const deepAtPath = fc
    .tuple(fc.constantFrom(...paths.filter((p) => p.length > 0), ['deep']), deepJson)
    .map(([p, deep]) => ({
      text: JSON.stringify(setAt(base, p, PLACEHOLDER)).replace(JSON.stringify(PLACEHOLDER), deep),
      note: `deep at ${p.join('.')}`,
    }));
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant({ text: JSON.stringify(base), note: 'valid' }) },
    { weight: 20, arbitrary: mutated },
    { weight: hogqlPaths.length ? 10 : 0, arbitrary: expressions },
    { weight: 6, arbitrary: fuzzObject.map((o) => ({ text: JSON.stringify(o), note: 'random object' })) },
    { weight: 4, arbitrary: deepAtPath },
    { weight: 2, arbitrary: deepJson.map((text) => ({ text, note: 'deep root' })) },
    { weight: 2, arbitrary: fuzzValue.map((v) => ({ text: JSON.stringify(v) ?? 'null', note: 'any JSON' })) },
    { weight: 4, arbitrary: fc.constantFrom(...BAD_JSON).map((text) => ({ text, note: 'bad JSON' })) },
    { weight: 2, arbitrary: fc.constant({ text: undefined, note: 'no body' }) },
    {
      weight: 1,
      arbitrary: hugeString.map((s) => ({
        text: JSON.stringify({ ...base, name: s, properties: { big: s } }),
        note: `huge ${s.length}`,
      })),
    },
  );
}

/** Query keys the routes read, plus noise. */
const QUERY_KEYS = [
  'limit',
  'offset',
  'format',
  'delete_events',
  '$unset',
  'distinct_id',
  'email',
  'search',
  'properties',
  'cursor',
  'from',
  'to',
  'level',
  'run_id',
  'instance_id',
  'refresh',
  'events',
  'actions',
  'date_from',
  'date_to',
  'interval',
  'breakdown',
  'breakdown_type',
  'display',
  'compare',
  'formula',
  'page',
  'compression',
  'ver',
  '_',
  'token',
  'api_key',
  'math',
  'filter_test_accounts',
  'breakdown_limit',
];

const BAD_QUERY_VALUES = [
  '',
  '-1',
  '0',
  '1.5',
  '1e3',
  '007',
  ' 1',
  '+1',
  '0x10',
  '１',
  '٣',
  '9'.repeat(20),
  String(2 ** 53 + 1),
  'NaN',
  'true',
  'True',
  'yes',
  'maybe',
  'csv',
  'json',
  'xml',
  'hour',
  'minute',
  'week',
  'month',
  '-1d',
  '-100000y',
  '-999999y',
  '9999999-01-01',
  'all',
  'dStart',
  '[{"id":"x"}]',
  '[{"id":',
  '{"a":1}',
  '[]',
  '[{"id":"$pageview","math":"sum","math_property":"__proto__"}]',
  '[{"key":"__proto__","value":"x","operator":"exact","type":"person"}]',
  '[{"key":"a","value":"(a+)+$","operator":"regex","type":"event"}]',
  '[{"key":"hostile","value":"^(a+)+$","operator":"regex","type":"event"}]',
  '[{"key":"hostile","value":"^(a+)+$","operator":"regex","type":"person"}]',
  '[{"key":"hostile","value":"(a|aa)+$","operator":"not_regex"}]',
  'A+B*C/0',
  'A/0',
  'gzip-js',
  'base64',
  'lz64',
  'DEBUG,NOPE',
  '%E2%82',
  `${'['.repeat(3000)}${']'.repeat(3000)}`,
  `[{"id":"x","properties":${'['.repeat(2000)}${']'.repeat(2000)}}]`,
  // Forged list cursors: a key of another shape, of another project's partition, and one DynamoDB would refuse.
  Buffer.from(JSON.stringify({ key: { pk: 'x' }, offset: 100 })).toString('base64url'),
  Buffer.from(
    JSON.stringify({
      key: {
        pk: 'PERSON#1#1',
        sk: 'PERSON',
        parent_pk: 'PROJECT#1#PERSONS',
        parent_sk: '2024-01-01T00:00:00.000Z#000000000001',
      },
      offset: 1,
    }),
  ).toString('base64url'),
  Buffer.from(
    JSON.stringify({
      key: { pk: 'PERSON#1#1', sk: 'PERSON', parent_pk: 'PROJECT#1#PERSONS', parent_sk: 'x'.repeat(2000) },
      offset: -1,
    }),
  ).toString('base64url'),
];

const queryArbitrary = fc
  .array(
    fc.tuple(
      fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...QUERY_KEYS) },
        { weight: 1, arbitrary: fc.constantFrom(...PROTO_KEYS) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 10 }) },
      ),
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...BAD_QUERY_VALUES) },
        { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
        { weight: 1, arbitrary: fuzzValue.map((v) => JSON.stringify(v) ?? '') },
      ),
    ),
    { maxLength: 5 },
  )
  .map((pairs) => {
    const params = new URLSearchParams();
    for (const [k, v] of pairs) params.append(k, v.slice(0, 2000));
    return params.toString();
  });

/** Raw query strings that URLSearchParams would never produce. */
const RAW_QUERIES = [
  '%',
  '%ZZ',
  'limit=%',
  '&&==&',
  'a[b]=1&a[c]=2',
  '__proto__[polluted]=1',
  'limit=1&limit=2&limit=abc',
  'format=csv&format=json',
  '=',
  '?',
];

/** What fills a path parameter: the tenant's real resource most of the time, else something hostile. */
function paramArbitrary(route: Route, name: string, t: FuzzTargets): fc.Arbitrary<{ value: string; own: boolean }> {
  const segments = route.path.split('/');
  const before = segments[segments.indexOf(`:${name}`) - 1];
  const valid: string[] = [];
  if (name === 'project_id') valid.push(String(t.projectId));
  else if (name === 'organization_id' || (name === 'id' && before === 'organizations'))
    valid.push(t.organizationId, t.organizationId.toUpperCase());
  else if (before === 'persons') valid.push(...t.personIds.map(String));
  else if (before === 'actions') valid.push(String(t.actionId));
  else if (before === 'batch_exports') valid.push(t.exportId);
  // A fuzzer that deletes the tenant's own resources would leave nothing to fuzz: deletes aim elsewhere.
  const destructive = route.method === 'DELETE' && name === 'id';
  const hostile = fc.oneof(
    fc
      .constantFrom(
        '0',
        '-1',
        '1.5',
        '1e3',
        '007',
        ' 1',
        '9'.repeat(16),
        '9'.repeat(40),
        '１',
        '٣',
        'NaN',
        'null',
        '__proto__',
        'constructor',
        ...UUIDS,
      )
      .map(encodeURIComponent),
    // Not `%2e%2e`: fetch resolves it as `..` before sending, and DELETE .../batch_exports/.. would delete the organization.
    fc.constantFrom('%', '%ZZ', '%00', '%2F', '%2e', 'a%2Fb', '%252e%252e'),
    fc.uuid().map((u) => u),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).map(encodeURIComponent),
    fc.string({ unit: 'grapheme', minLength: 100, maxLength: 300 }).map(encodeURIComponent),
  );
  if (destructive || valid.length === 0) return hostile.map((value) => ({ value, own: false }));
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...valid).map((v) => ({ value: encodeURIComponent(v), own: true })) },
    { weight: 1, arbitrary: hostile.map((value) => ({ value, own: false })) },
  );
}

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json; charset=utf-16',
  'application/vnd.api+json',
  'multipart/form-data; boundary=x',
  'APPLICATION/JSON',
  'application/xml',
  'application/json;;;',
  ' application/json ',
  'application/octet-stream',
  '*/*',
];

function authArbitrary(route: Route, t: FuzzTargets): fc.Arbitrary<{ header?: string; query?: string }> {
  if (route.auth === 'project_token' || route.auth === 'public') return fc.constant({});
  return fc.oneof(
    { weight: 14, arbitrary: fc.constant({ header: `Bearer ${t.key}` }) },
    { weight: 1, arbitrary: fc.constant({}) },
    {
      weight: 1,
      arbitrary: fc
        .string({ unit: 'binary-ascii', minLength: 1, maxLength: 60 })
        .map((s) => ({ header: `Bearer phx_${s.replace(/[^\x21-\x7e]/g, '')}` })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          'Bearer',
          'Bearer  ',
          'Basic dXNlcjpwYXNz',
          'Token abc',
          `bearer ${t.key}`,
          `Bearer ${t.key} extra`,
          'Bearer \u00ff\u00fe',
        )
        .map((header) => ({ header })),
    },
    { weight: 1, arbitrary: fc.constant({ query: `personal_api_key=${encodeURIComponent(t.key)}` }) },
  );
}

/** Capture bodies: SDK envelopes with fuzzed events, tokens and encodings. */
function captureBodyArbitrary(
  t: FuzzTargets,
): fc.Arbitrary<{ body?: string | Buffer; headers: Record<string, string>; query: string; note: string }> {
  const token = fc.oneof(
    { weight: 6, arbitrary: fc.constant(t.captureToken) },
    { weight: 1, arbitrary: fuzzValue },
    { weight: 1, arbitrary: fc.constantFrom(t.key, 'phc_nope', 'x'.repeat(300)) },
  );
  const event = fc.record(
    {
      event: fc.oneof(
        {
          weight: 3,
          arbitrary: fc.constantFrom(
            '$pageview',
            'signup',
            '$identify',
            '$create_alias',
            '$set',
            '$groupidentify',
            '$snapshot',
          ),
        },
        { weight: 2, arbitrary: fuzzValue },
      ),
      distinct_id: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('fuzzer', 'fuzz-2') },
        { weight: 2, arbitrary: fuzzValue },
      ),
      properties: fc.oneof(
        fuzzObject,
        fuzzValue,
        fc.constant({ $set: { __proto__x: 1 }, $anon_distinct_id: 'fuzzer' }),
      ),
      timestamp: fc.oneof(
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        fuzzValue,
      ),
      uuid: fc.oneof(fc.uuid(), fuzzValue),
      offset: fuzzNumber,
      $set: fuzzValue,
    },
    { requiredKeys: [] },
  );
  const envelope = fc.oneof(
    fc.record(
      {
        api_key: token,
        batch: fc.oneof(
          { weight: 4, arbitrary: fc.array(event, { maxLength: 4 }) },
          { weight: 1, arbitrary: fuzzValue },
        ),
        sent_at: fc.oneof(fc.constant(undefined), fuzzValue),
      },
      { requiredKeys: ['api_key'] },
    ),
    fc.tuple(token, event).map(([tok, e]) => ({ ...e, token: tok })),
    fc.array(
      fc.tuple(token, event).map(([tok, e]) => ({ ...e, properties: { token: tok } })),
      { maxLength: 3 },
    ),
    fuzzValue,
  );
  return fc.oneof(
    {
      weight: 30,
      arbitrary: envelope.map((e) => ({
        body: JSON.stringify(e) ?? '',
        headers: { 'content-type': 'application/json' },
        query: '',
        note: 'envelope',
      })),
    },
    {
      weight: 5,
      arbitrary: envelope.map((e) => ({
        body: gzipSync(JSON.stringify(e) ?? ''),
        headers: { 'content-type': 'text/plain' },
        query: 'compression=gzip-js',
        note: 'gzip',
      })),
    },
    {
      weight: 5,
      arbitrary: envelope.map((e) => ({
        body: `data=${encodeURIComponent(Buffer.from(JSON.stringify(e) ?? '').toString('base64'))}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        query: 'compression=base64',
        note: 'form base64',
      })),
    },
    {
      weight: 5,
      arbitrary: fc
        .constantFrom(...BAD_JSON, 'data=', 'data=%%%', '\x1f\x8b\x08garbage')
        .map((body) => ({ body, headers: { 'content-type': 'application/json' }, query: '', note: 'bad bytes' })),
    },
    {
      weight: 5,
      arbitrary: fc.tuple(envelope, fc.constantFrom('gzip', 'lz64', 'base64', 'br')).map(([e, enc]) => ({
        body: JSON.stringify(e) ?? '',
        headers: { 'content-type': 'text/plain', 'content-encoding': enc },
        query: `compression=${enc}`,
        note: `mislabelled ${enc}`,
      })),
    },
    {
      weight: 5,
      arbitrary: deepJson.map((body) => ({
        body,
        headers: { 'content-type': 'application/json' },
        query: '',
        note: 'deep',
      })),
    },
    {
      weight: 2,
      arbitrary: hugeString.map((s) => ({
        body: JSON.stringify({
          api_key: t.captureToken,
          batch: [{ event: 'big', distinct_id: 'fuzzer', properties: { s } }],
        }),
        headers: { 'content-type': 'application/json' },
        query: '',
        note: `huge ${s.length}`,
      })),
    },
  );
}

function fill(route: Route, t: FuzzTargets): fc.Arbitrary<{ path: string; own: boolean }> {
  const names = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!);
  if (names.length === 0) return fc.constant({ path: route.path, own: true });
  return fc.tuple(...names.map((n) => paramArbitrary(route, n, t))).map((values) => {
    let path = route.path;
    for (const [i, n] of names.entries()) path = path.replace(`:${n}`, values[i]!.value);
    // The organization or project the path names; a trailing `:id` under it (person, action, export) is not the tenant.
    const tenantParams = names.length > 1 && names.at(-1) === 'id' ? values.slice(0, -1) : values;
    return { path, own: tenantParams.every((v) => v.own) };
  });
}

export function requestArbitrary(routes: readonly Route[], t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...routes).chain((route): fc.Arbitrary<FuzzRequest> => {
    if (route.auth === 'project_token') {
      return fc.tuple(fc.constantFrom('', '/'), captureBodyArbitrary(t), queryArbitrary).map(([slash, b, q]) => ({
        route,
        method: route.method,
        url: `${route.path}${slash}?${[b.query, q.length > 6_000 ? '' : q].filter(Boolean).join('&')}`,
        headers: b.headers,
        body: b.body,
        describe: `${b.note}: ${typeof b.body === 'string' ? b.body.slice(0, 400) : `<${b.body?.length} bytes>`}`,
        ownTenant: true,
      }));
    }
    const writes = route.method === 'POST' || route.method === 'PATCH';
    return fc
      .record({
        path: fill(route, t),
        slash: fc.constantFrom('', '/'),
        query: fc.oneof(
          { weight: 8, arbitrary: queryArbitrary },
          { weight: 1, arbitrary: fc.constantFrom(...RAW_QUERIES) },
        ),
        validQuery: fc.boolean(),
        auth: authArbitrary(route, t),
        body: writes
          ? bodyArbitrary(route, t)
          : fc.oneof(
              { weight: 9, arbitrary: fc.constant({ text: undefined, note: 'no body' }) },
              { weight: 1, arbitrary: fuzzObject.map((o) => ({ text: JSON.stringify(o), note: 'body on a read' })) },
            ),
        contentType: fc.oneof(
          { weight: 12, arbitrary: fc.constant('application/json') },
          { weight: 1, arbitrary: fc.constant(undefined) },
          { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
        ),
        // Another method on the same path (405, or another operation). Never DELETE: the path may name the tenant's own resources.
        otherMethod: fc.oneof(
          { weight: 30, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PATCH', 'PUT', 'HEAD', 'OPTIONS') },
        ),
      })
      .map((r) => {
        // The trend GET needs its events to get anywhere: keep a valid one under the fuzzed parameters half the time.
        const base =
          route.operationId === 'insights_trend_retrieve' && r.validQuery
            ? `events=${encodeURIComponent('[{"id":"$pageview"}]')}`
            : '';
        // API Gateway refuses request lines over 10 KB before any code runs (Node's server: 431): stay under.
        const query = [base, r.query.length > 6_000 ? '' : r.query, r.auth.query].filter(Boolean).join('&');
        const headers: Record<string, string> = {};
        if (r.auth.header !== undefined) headers.authorization = r.auth.header;
        if (r.body.text !== undefined && r.contentType !== undefined) headers['content-type'] = r.contentType;
        return {
          route,
          method: r.otherMethod ?? route.method,
          url: `${r.path.path}${r.slash}${query ? `?${query}` : ''}`,
          headers,
          body: r.body.text,
          describe: `${r.body.note}: ${r.body.text?.slice(0, 400) ?? ''}`,
          ownTenant: r.path.own,
        };
      });
  });
}
