// This file sends ~10,000 requests with one key: switch the per-key rate limits off for its process.
process.env.ANALYTICS_RATE_LIMITS = '{"enabled":false}';

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_TIMEOUT_SECONDS, routePaths, type Route } from '#functions/routes.ts';
import { findUserIdByEmail } from '#shared/db/users.ts';
import { exclusiveFile, ownDeletionQueues } from '../support/isolation.ts';
import { PROTO_KEYS, requestArbitrary, type FuzzRequest, type FuzzTargets } from '../support/fuzz-requests.ts';
import { diffSnapshots, snapshotTenant, type Snapshot, type TenantScope } from '../support/tenant-snapshot.ts';
import { eventually, expectErrorShape, newKey, newProject, uniqueEmail, useApi } from '../support/api.ts';

// A scheduler tick from another file (at the real time) would park or run this tenant's export runs
// between snapshots, a change no fuzzed request made: no tick runs while this file does.
exclusiveFile('export-scheduler');
// Deletes with delete_events=true may succeed here; they go to a queue of this file's own.
ownDeletionQueues('fuzz');

const api = useApi();

/** RE2 runs it in linear time; a backtracking engine takes exponential time on HOSTILE_VALUE. */
const CATASTROPHIC = '^(a+)+$';
const HOSTILE_KEY = 'hostile';
const HOSTILE_VALUE = `${'a'.repeat(10_000)}!`;

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const WINDOW = Number(process.env.FUZZ_WINDOW ?? 200);
const CONCURRENCY = 8;
/**
 * A request that takes longer than the function's timeout is a finding too (no unbounded work per
 * request); the local server answers API Gateway's 500 at that point anyway, as the cloud would.
 */
const SLOW_MS = API_TIMEOUT_SECONDS * 1000;

interface Outcome {
  request: FuzzRequest;
  status: number;
  text: string;
  contentType: string | null;
  ms: number;
  /** 503 `service_unavailable` answers retried before this one (the service's word for a too-slow DynamoDB). */
  unavailable: number;
}

/**
 * As a PostHog SDK would: a 503 `service_unavailable` (with Retry-After) is retried, up to 3 times.
 * On an idle machine it never happens; on a machine loaded enough for a DynamoDB Local call to outlast
 * the SDK timeouts, it is the service's right answer, and the last answer is the one judged.
 */
async function send(r: FuzzRequest): Promise<Outcome> {
  for (let unavailable = 0; ; unavailable += 1) {
    const o = { ...(await sendOnce(r)), unavailable };
    if (o.status !== 503 || !o.text.includes('"service_unavailable"') || unavailable === 3) return o;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

async function sendOnce(r: FuzzRequest): Promise<Omit<Outcome, 'unavailable'>> {
  const started = performance.now();
  // fetch refuses a body on GET and HEAD: those go without one.
  const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : r.body;
  try {
    const res = await fetch(`${api.baseUrl}${r.url}`, {
      method: r.method,
      headers: r.headers,
      body,
      signal: AbortSignal.timeout(SLOW_MS * 2),
    });
    const text = await res.text();
    return {
      request: r,
      status: res.status,
      text,
      contentType: res.headers.get('content-type'),
      ms: performance.now() - started,
    };
  } catch (error) {
    // No answer at all (connection reset, timeout): as bad as a 5xx.
    const cause = (error as { cause?: unknown }).cause;
    return {
      request: r,
      status: 599,
      text: `no response: ${String(error)} ${String(cause)}`,
      contentType: null,
      ms: performance.now() - started,
    };
  }
}

async function pool<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(size, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

const describeRequest = (o: Outcome) =>
  `${o.request.method} ${o.request.url.slice(0, 300)} ${JSON.stringify(o.request.headers)} [${o.request.describe.slice(0, 300)}] -> ${o.status} ${o.text.slice(0, 300)}`;

/** What is wrong with one response, if anything: a 5xx, a 4xx outside the error shape, or a slow answer. */
function problem(o: Outcome): string | undefined {
  if (o.status >= 500) return `server error ${o.status}`;
  if (o.ms > SLOW_MS) return `took ${Math.round(o.ms)} ms`;
  // A response to HEAD has no body by definition.
  if (o.status >= 400 && o.request.method !== 'HEAD') {
    if (!o.contentType?.startsWith('application/json')) return `4xx with content-type ${o.contentType}`;
    let body: unknown;
    try {
      body = JSON.parse(o.text);
    } catch {
      return '4xx body is not JSON';
    }
    const keys = body && typeof body === 'object' ? Object.keys(body).sort().join(',') : typeof body;
    if (keys !== 'attr,code,detail,type') return `4xx body keys ${keys}`;
    const b = body as Record<string, unknown>;
    if (
      typeof b.type !== 'string' ||
      typeof b.code !== 'string' ||
      typeof b.detail !== 'string' ||
      !(b.attr === null || typeof b.attr === 'string')
    )
      return '4xx body field types';
  }
  return undefined;
}

/**
 * A 2xx of an operation that may write (reads only ever write rate-limit counters and the trend cache,
 * which snapshots leave out), or a request retried after a 503 (its first attempt may have written).
 */
const mayWrite = (o: Outcome) =>
  (o.status < 300 || o.unavailable > 0) &&
  (o.request.route.access === 'write' || o.request.method !== o.request.route.method);

/**
 * A rejected request of an operation that writes, refused by the operation's own code (validation,
 * lookups: 400, 404, 409) rather than before it: the router (404/405), the body parser (413, 415,
 * bad JSON) and auth (401, 403) answer before any handler code runs, and make no write but the
 * rate-limit counter's; so does tenancy for a path naming another organization or project (the tenant
 * matrix covers those). These are replayed in a window of their own when their first window held a success.
 */
const rejectedByHandler = (o: Outcome) =>
  (o.request.route.access === 'write' || o.request.method !== o.request.route.method) &&
  o.request.ownTenant &&
  [400, 404, 409].includes(o.status) &&
  !o.text.includes('"parse_error"');

describe('fuzzed requests on every route', () => {
  let targets: FuzzTargets;
  let scope: TenantScope;

  beforeAll(async () => {
    const { key, email } = await newKey({ email: uniqueEmail('fuzz') });
    const c = api.as(key);
    const org = (await c.post('/api/organizations', { name: 'Fuzz target' })).body;
    const captureOrg = (await c.post('/api/organizations', { name: 'Fuzz capture' })).body;
    const projectId = org.teams[0].id as number;
    // Persons made the way production makes them: captured, then ingested by the run's stream worker.
    const distinctIds = ['fz-1', 'fz-2', 'fz-3', 'fz-4'];
    await api.as().post('/batch', {
      api_key: org.teams[0].api_token,
      batch: [
        ...distinctIds.map((d, i) => ({
          event: '$pageview',
          distinct_id: d,
          timestamp: '2024-03-01T10:00:00Z',
          properties: { $set: { email: `${d}@fuzz.example`, n: i } },
        })),
        {
          event: '$identify',
          distinct_id: 'fz-1',
          timestamp: '2024-03-01T10:01:00Z',
          properties: { $anon_distinct_id: 'fz-anon' },
        },
      ],
    });
    // Hostile data and hostile stored filters: a string that makes a backtracking regex engine run for
    // ever against a catastrophic pattern kept in the project's test-account filters, in the fixture
    // action's step and in the fixture export's filters, so fuzzed trends (filter_test_accounts, the
    // action as a series), persons lists and export runs all meet it.
    await api.as().post('/batch', {
      api_key: org.teams[0].api_token,
      batch: [
        {
          event: '$pageview',
          distinct_id: 'fz-hostile',
          timestamp: new Date(Date.now() - 3_600_000).toISOString(),
          properties: { [HOSTILE_KEY]: HOSTILE_VALUE, $set: { [HOSTILE_KEY]: HOSTILE_VALUE } },
        },
      ],
    });
    expect(
      (
        await c.patch(`/api/environments/${projectId}`, {
          test_account_filters: [{ key: HOSTILE_KEY, value: CATASTROPHIC, operator: 'not_regex', type: 'event' }],
        })
      ).status,
    ).toBe(200);
    const persons = await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/persons`);
      expect(res.body.results).toHaveLength(5);
      expect(res.body.results.flatMap((p: { distinct_ids: string[] }) => p.distinct_ids)).toContain('fz-anon');
      return res.body.results as { id: number; distinct_ids: string[] }[];
    }, 20_000);
    const action = (
      await c.post(`/api/environments/${projectId}/actions`, {
        name: 'Fuzz action',
        steps: [
          {
            event: '$pageview',
            properties: [{ key: HOSTILE_KEY, value: CATASTROPHIC, operator: 'regex', type: 'event' }],
          },
        ],
      })
    ).body;
    const exp = (
      await c.post(`/api/organizations/${org.id}/batch_exports`, {
        name: 'Fuzz export',
        interval: 'hour',
        paused: true,
        destination: {
          type: 'S3',
          config: {
            bucket_name: 'fuzz',
            region: 'us-east-1',
            prefix: '',
            role_arn: 'arn:aws:iam::123456789012:role/exports',
          },
        },
        filters: [{ key: HOSTILE_KEY, value: CATASTROPHIC, operator: 'regex', type: 'event' }],
      })
    ).body;
    expect(action.id).toEqual(expect.any(Number));
    expect(exp.id).toEqual(expect.any(String));
    const me = await findUserIdByEmail(email);
    targets = {
      key,
      organizationId: org.id,
      projectId,
      personIds: persons.map((p) => p.id),
      distinctIds: persons.flatMap((p) => p.distinct_ids),
      actionId: action.id,
      exportId: exp.id,
      captureToken: captureOrg.teams[0].api_token,
    };
    scope = {
      userId: me!,
      organizationIds: [org.id, captureOrg.id],
      // The capture project's own partition is left out: the ingest worker keeps writing it after accepted captures.
      projectIds: [projectId],
      // Paths name only the fixture's export; exports the fuzz creates are listed (EXPORTS#) but their runs and logs not read.
      exportIds: [exp.id],
      eventProjects: [captureOrg.teams[0].id],
      eventsSince: new Date(),
    };
  }, 60_000);

  it(`answers ${REQUESTS} hostile requests with no 5xx, every 4xx in the error shape, and rejected requests change nothing`, async () => {
    // The ingest worker may still be writing the fixture's persons: start from a table that has settled.
    let baseline: Snapshot = await snapshotTenant(scope);
    await eventually(async () => {
      await new Promise((r) => setTimeout(r, 300));
      const again = await snapshotTenant(scope);
      const same = diffSnapshots(baseline, again).length === 0;
      baseline = again;
      expect(same).toBe(true);
    }, 20_000);

    const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();
    const started = performance.now();
    const perRoute = new Map<string, number>();
    const statuses = new Map<number, number>();
    const changes: string[] = [];
    const findings: string[] = [];
    const allOutcomes: Outcome[] = [];
    let sent = 0;
    let replayed = 0;
    let cleanWindows = 0;
    /** Rejected requests whose window was compared with the snapshot before it. */
    let rejectedCompared = 0;
    let slowest = 0;
    let unavailable = 0;
    let snapshotMs = 0;
    let snapshotBytes = 0;
    let snapshotItems = 0;

    const runWindow = async (requests: FuzzRequest[]) => {
      const outcomes = await pool(requests, CONCURRENCY, send);
      for (const o of outcomes) {
        slowest = Math.max(slowest, o.ms);
        unavailable += o.unavailable;
      }
      const bad = outcomes.map((o) => [o, problem(o)] as const).filter(([, p]) => p);
      return { outcomes, bad };
    };

    /** Snapshot after a window; compare with the one before when nothing in it could legitimately write. */
    const check = async (outcomes: Outcome[]) => {
      const t0 = performance.now();
      const after = await snapshotTenant(scope);
      snapshotMs += performance.now() - t0;
      snapshotBytes = [...after.values()].reduce((n, v) => n + v.length, 0);
      snapshotItems = after.size;
      if (!outcomes.some(mayWrite)) {
        cleanWindows += 1;
        rejectedCompared += outcomes.filter((o) => o.status >= 400).length;
        const diff = diffSnapshots(baseline, after);
        if (diff.length) {
          const rejectedWrites = outcomes.filter((o) => o.request.route.access === 'write').map(describeRequest);
          changes.push(`${diff.join('\n')}\n  after one of:\n  ${rejectedWrites.join('\n  ')}`);
        }
      }
      baseline = after;
    };

    const result = await fc.check(
      fc.asyncProperty(
        fc.array(requestArbitrary(routePaths, targets), { minLength: WINDOW, maxLength: WINDOW }),
        async (requests) => {
          const { outcomes, bad } = await runWindow(requests);
          sent += outcomes.length;
          if (process.env.FUZZ_DEBUG) allOutcomes.push(...outcomes);
          for (const o of outcomes) {
            perRoute.set(
              o.request.route.operationId + o.request.route.path,
              (perRoute.get(o.request.route.operationId + o.request.route.path) ?? 0) + 1,
            );
            statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
          }
          await check(outcomes);
          // A window with a write that succeeded proves nothing about its rejected writes: replay those
          // (still rejected against the new state) in a window of their own, and compare again.
          if (outcomes.some(mayWrite)) {
            const rejected = outcomes.filter(rejectedByHandler).map((o) => o.request);
            const replay = await runWindow(rejected);
            replayed += rejected.length;
            bad.push(...replay.bad);
            await check(replay.outcomes);
          }
          for (const [o, p] of bad) findings.push(`${p}: ${describeRequest(o)}`);
          // With FUZZ_SHRINK=1 fast-check shrinks the first failing window to the requests that fail.
          if (bad.length && process.env.FUZZ_SHRINK === '1')
            throw new Error(bad.map(([o, p]) => `${p}: ${describeRequest(o)}`).join('\n'));
        },
      ),
      {
        numRuns: Math.ceil(REQUESTS / WINDOW),
        endOnFailure: process.env.FUZZ_SHRINK !== '1',
        seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
      },
    );
    // fast-check's own report would print whole windows (megabytes of huge strings): report the findings and the seed only.
    if (result.failed)
      throw new Error(
        `fuzz failed (seed ${result.seed}, path ${result.counterexamplePath}):\n${(result.errorInstance as Error | undefined)?.message ?? String(result.errorInstance)}`,
      );

    const seconds = (performance.now() - started) / 1000;
    // The server runs in this process: nothing it parsed may have reached Object.prototype.
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    console.info(
      `fuzz (seed ${result.seed}): ${sent} requests (+${replayed} replays) in ${seconds.toFixed(1)} s, ${cleanWindows} clean windows compared holding ${rejectedCompared} rejected requests (snapshots ${Math.round(snapshotMs)} ms, last ${snapshotItems} items / ${Math.round(snapshotBytes / 1024)} KB), slowest ${Math.round(slowest)} ms, ${unavailable} retried 503s; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
    );
    if (process.env.FUZZ_DEBUG) {
      // Where the time went and what answered 404, by operation and status.
      const byRoute = new Map<string, { n: number; ms: number }>();
      for (const o of allOutcomes) {
        const k = `${o.request.route.operationId} ${o.status}`;
        const e = byRoute.get(k) ?? { n: 0, ms: 0 };
        byRoute.set(k, { n: e.n + 1, ms: e.ms + o.ms });
      }
      console.info(
        [...byRoute]
          .sort((a, b) => b[1].ms - a[1].ms)
          .map(([k, e]) => `${k}: ${e.n} x ${Math.round(e.ms / e.n)} ms`)
          .join('\n'),
      );
    }
    expect(findings.slice(0, 20), `${findings.length} bad responses (seed ${result.seed})`).toEqual([]);
    expect(changes, `table changed by rejected requests (seed ${result.seed})`).toEqual([]);
    expect(sent).toBeGreaterThanOrEqual(REQUESTS);
    for (const r of routePaths as readonly Route[])
      expect(perRoute.get(r.operationId + r.path) ?? 0, `${r.method} ${r.path}`).toBeGreaterThan(
        REQUESTS / routePaths.length / 3,
      );
  }, 600_000);
});

describe('property names that are also Object.prototype names', () => {
  let c: ReturnType<typeof api.as>;
  let projectId: number;
  let personId: number;

  beforeAll(async () => {
    const p = await newProject(api.as);
    c = api.as(p.key);
    projectId = p.projectId;
    await api.as().post('/batch', {
      api_key: p.token,
      batch: [
        {
          event: 'proto',
          distinct_id: 'proto-1',
          timestamp: new Date(Date.now() - 3_600_000).toISOString(),
          properties: { plain: 1 },
        },
      ],
    });
    personId = await eventually(async () => {
      const res = await c.get(`/api/environments/${projectId}/persons?distinct_id=proto-1`);
      expect(res.body.results).toHaveLength(1);
      return res.body.results[0].id as number;
    });
  });

  it('stores any key as data (__proto__, constructor, toString included) and reads it back', async () => {
    const value = fc.jsonValue({ maxDepth: 2 }).filter((v) => JSON.stringify(v).length < 2_000);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PROTO_KEYS, 'plain-key'), value, async (key, v) => {
        // Written as raw JSON: an object literal would turn `__proto__` into a prototype instead of a key.
        const raw = `{"properties":{${JSON.stringify(key)}:${JSON.stringify(v)}}}`;
        const res = await c.request('PATCH', `/api/environments/${projectId}/persons/${personId}`, {
          raw,
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status).toBe(200);
        const stored = (await c.get(`/api/environments/${projectId}/persons/${personId}`)).body.properties;
        expect(Object.hasOwn(stored, key)).toBe(true);
        expect(stored[key]).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 40 },
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads a prototype name the data does not hold as absent in filters, breakdowns and property math', async () => {
    const trend = (body: unknown) => c.post(`/api/environments/${projectId}/insights/trend`, body);
    for (const key of PROTO_KEYS) {
      // Only `plain` is set on the one 'proto' event: everything else is "no value".
      const filtered = await trend({
        events: [{ id: 'proto', properties: [{ key, operator: 'is_set' }] }],
        date_from: '-2d',
      });
      expect(filtered.status).toBe(200);
      expect(filtered.body.result[0].count).toBe(0);
      const broken = await trend({ events: [{ id: 'proto' }], date_from: '-2d', breakdown: key });
      expect(broken.status).toBe(200);
      expect(
        broken.body.result.map((s: { breakdown_value: unknown; count: number }) => [s.breakdown_value, s.count]),
      ).toEqual([['$$_posthog_breakdown_null_$$', 1]]);
      const persons = await c.get(
        `/api/environments/${projectId}/persons?properties=${encodeURIComponent(
          JSON.stringify([
            { key: `${key}-absent`, operator: 'is_set', type: 'person' },
            { key, operator: 'is_not_set', type: 'person' },
          ]),
        )}`,
      );
      expect(persons.status).toBe(200);
    }
  });

  it('answers 400 for a value whose toString or valueOf is data, wherever a choice or a filter is read', async () => {
    const poisoned = fc
      .oneof(
        fc.record({ toString: fc.jsonValue({ maxDepth: 1 }) }),
        fc.record({ valueOf: fc.jsonValue({ maxDepth: 1 }), toString: fc.jsonValue({ maxDepth: 1 }) }),
        fc.jsonValue({ maxDepth: 1 }).map((v) => [{ toString: v }]),
      )
      .filter(
        (v) =>
          JSON.stringify(v).includes('{') &&
          !(
            v &&
            typeof v === 'object' &&
            !Array.isArray(v) &&
            typeof (v as { toString?: unknown }).toString === 'function'
          ),
      );
    const at: Record<string, (v: unknown) => [string, string, unknown]> = {
      interval: (v) => ['POST', 'insights/trend', { events: [{ id: 'proto' }], interval: v }],
      display: (v) => ['POST', 'insights/trend', { events: [{ id: 'proto' }], display: v }],
      breakdown_type: (v) => [
        'POST',
        'insights/trend',
        { events: [{ id: 'proto' }], breakdown: 'plain', breakdown_type: v },
      ],
      math: (v) => ['POST', 'insights/trend', { events: [{ id: 'proto', math: v }] }],
      group_type: (v) => ['POST', 'insights/trend', { events: [{ id: 'proto', properties: { type: v, values: [] } }] }],
      filter_type: (v) => [
        'POST',
        'insights/trend',
        { events: [{ id: 'proto', properties: [{ key: 'plain', value: 1, type: v }] }] },
      ],
      filter_operator: (v) => [
        'POST',
        'insights/trend',
        { properties: [{ key: 'plain', value: 1, operator: v }], events: [{ id: 'proto' }] },
      ],
      filter_number: (v) => [
        'POST',
        'insights/trend',
        { events: [{ id: 'proto', properties: [{ key: 'plain', value: v, operator: 'gt' }] }] },
      ],
      filter_date: (v) => [
        'POST',
        'insights/trend',
        { events: [{ id: 'proto', properties: [{ key: 'plain', value: v, operator: 'is_date_before' }] }] },
      ],
      test_account_filters: (v) => [
        'PATCH',
        '',
        { test_account_filters: [{ key: 'plain', value: 1, operator: v, type: 'event' }] },
      ],
      export_destination: (v) => [
        'POST',
        'batch_exports',
        { name: 'E', interval: 'hour', destination: { type: v, config: {} } },
      ],
    };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(at)), poisoned, async (where, v) => {
        const [method, sub, body] = at[where]!(v);
        const path =
          sub === 'batch_exports'
            ? `/api/organizations/${(await c.get(`/api/environments/${projectId}`)).body.organization}/batch_exports`
            : `/api/environments/${projectId}${sub ? `/${sub}` : ''}`;
        const res = await c.request(method, path, { body });
        expect(res.status, `${where}: ${res.text}`).toBe(400);
        expectErrorShape(res.body);
      }),
      { numRuns: 60 },
    );
  });
});
