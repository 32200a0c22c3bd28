import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { marshall } from '@aws-sdk/util-dynamodb';
import { eventItem } from '#shared/db/events.ts';
import { lambdaContext } from '../../infra/local/lambda-context.ts';
import { newKey } from '../support/api.ts';
import { httpApiEvent } from '../support/lambda-event.ts';

interface Emf {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  [key: string]: unknown;
}

/** The EMF blobs among the lines written to stdout: JSON objects carrying `_aws.CloudWatchMetrics`. */
function emfBlobs(lines: string[]): Emf[] {
  return lines
    .flatMap((chunk) => chunk.split('\n'))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((o) => o._aws?.CloudWatchMetrics);
}
const metricNames = (blob: Emf) => blob._aws.CloudWatchMetrics[0]!.Metrics.map((m) => m.Name);
const withMetric = (blobs: Emf[], name: string) => blobs.filter((b) => metricNames(b).includes(name));

const route = {
  operationId: 'metrics_test_op',
  method: 'GET',
  path: '/api/organizations',
  scope: 'organization:read',
} as const;

let apiHandler: typeof import('#shared/http/handler.ts').apiHandler;
let ok: typeof import('#shared/http/responses.ts').ok;
let createOrganization: typeof import('#functions/organizations/create.ts').handler;
let capture: typeof import('#functions/capture/capture.ts').handler;
let ingest: typeof import('#functions/workers/ingest-events.ts').handler;

// The local runtime leaves EMF out; switch it on for this file, and use a tiny CRUD limit to see Throttled.
// Both are read when the modules load (the metrics) or first used (the config): load fresh copies.
beforeAll(async () => {
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  vi.stubEnv('ANALYTICS_RATE_LIMITS', JSON.stringify({ crud: { minute: 3 } }));
  vi.resetModules();
  ({ apiHandler } = await import('#shared/http/handler.ts'));
  ({ ok } = await import('#shared/http/responses.ts'));
  ({ handler: createOrganization } = await import('#functions/organizations/create.ts'));
  ({ handler: capture } = await import('#functions/capture/capture.ts'));
  ({ handler: ingest } = await import('#functions/workers/ingest-events.ts'));
});

describe('metrics (CloudWatch EMF on stdout)', () => {
  let lines: string[];
  beforeEach(async () => {
    // Three requests of one key must fall in one minute window.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 8_000) await new Promise((r) => setTimeout(r, left + 200));
    lines = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: any) => {
      lines.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('emits RequestCount, RequestLatency, ClientErrors, ServerErrors per request with the operation dimension, and Throttled on a 429', async () => {
    const { key } = await newKey();
    const handler = apiHandler(route, {}, async () => ok({}));
    expect(
      (await handler(httpApiEvent('GET', '/api/organizations', key), lambdaContext('metrics_test_op'))).statusCode,
    ).toBe(200);
    const [first] = emfBlobs(lines);
    expect(first!._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: 'Analytics',
      Dimensions: [['service', 'operation']],
    });
    expect(first!._aws.CloudWatchMetrics[0]!.Metrics).toEqual(
      expect.arrayContaining([
        { Name: 'RequestCount', Unit: 'Count' },
        { Name: 'RequestLatency', Unit: 'Milliseconds' },
        { Name: 'ServerErrors', Unit: 'Count' },
        { Name: 'ClientErrors', Unit: 'Count' },
      ]),
    );
    expect(first).toMatchObject({
      service: 'analytics',
      operation: 'metrics_test_op',
      RequestCount: 1,
      ServerErrors: 0,
      ClientErrors: 0,
    });
    expect(typeof first!.RequestLatency).toBe('number');
    expect(metricNames(first!)).not.toContain('Throttled');

    lines.length = 0;
    expect(
      (await handler(httpApiEvent('GET', '/api/organizations', undefined), lambdaContext('metrics_test_op')))
        .statusCode,
    ).toBe(401);
    expect(emfBlobs(lines)).toEqual([
      expect.objectContaining({ operation: 'metrics_test_op', RequestCount: 1, ClientErrors: 1, ServerErrors: 0 }),
    ]);

    const failing = apiHandler(route, {}, async () => {
      throw new Error('boom');
    });
    lines.length = 0;
    expect(
      (await failing(httpApiEvent('GET', '/api/organizations', key), lambdaContext('metrics_test_op'))).statusCode,
    ).toBe(500);
    expect(emfBlobs(lines)).toEqual([expect.objectContaining({ RequestCount: 1, ServerErrors: 1, ClientErrors: 0 })]);

    await handler(httpApiEvent('GET', '/api/organizations', key), lambdaContext('metrics_test_op'));
    lines.length = 0;
    expect(
      (await handler(httpApiEvent('GET', '/api/organizations', key), lambdaContext('metrics_test_op'))).statusCode,
    ).toBe(429);
    const [throttled] = emfBlobs(lines);
    expect(metricNames(throttled!)).toContain('Throttled');
    expect(throttled).toMatchObject({ operation: 'metrics_test_op', Throttled: 1, ClientErrors: 1 });

    const all = lines.join('');
    expect(all).not.toContain(key);
    expect(all).not.toContain(key.slice(4));
  });

  it('counts captured events by outcome (accepted, deduplicated, rejected) and the capture request under operation "capture"', async () => {
    const { key } = await newKey();
    const org = await createOrganization(
      httpApiEvent('POST', '/api/organizations', key, { name: 'Metrics' }),
      lambdaContext('organizations_create'),
    );
    expect(org.statusCode).toBe(201);
    const token = JSON.parse(org.body!).teams[0].api_token as string;
    lines.length = 0;
    const uuid = '01900000-0000-7000-8000-000000000001';
    const res = await capture(
      httpApiEvent('POST', '/batch', undefined, {
        api_key: token,
        batch: [
          { event: 'a', distinct_id: 'd1', uuid },
          { event: 'a', distinct_id: 'd1', uuid },
          { event: 'b', distinct_id: 'd2' },
          { distinct_id: 'd3' },
        ],
      }),
      lambdaContext('capture'),
    );
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body!)).toMatchObject({ accepted: 2, deduplicated: 1, rejected: 1 });
    const blobs = emfBlobs(lines);
    const outcomes = withMetric(blobs, 'CaptureEvents');
    for (const b of outcomes)
      expect(b._aws.CloudWatchMetrics[0]).toMatchObject({
        Namespace: 'Analytics',
        Dimensions: [['service', 'outcome']],
      });
    expect(Object.fromEntries(outcomes.map((b) => [b.outcome, b.CaptureEvents]))).toEqual({
      accepted: 2,
      deduplicated: 1,
      rejected: 1,
    });
    expect(withMetric(blobs, 'RequestCount')).toEqual([
      expect.objectContaining({ operation: 'capture', RequestCount: 1, ClientErrors: 0 }),
    ]);
    expect(lines.join('')).not.toContain(token);
  });

  it('has the ingest worker report IngestedEvents and IngestionLag (now minus the oldest inserted_at) once per batch', async () => {
    const projectId = 900_000_000 + Math.floor(Math.random() * 1_000_000);
    const insertedAt = new Date(Date.now() - 5_000).toISOString();
    const item = eventItem({
      uuid: '01900000-0000-7000-8000-0000000000aa',
      event: 'x',
      distinct_id: 'lag',
      project_id: projectId,
      properties: {},
      timestamp: insertedAt,
      inserted_at: insertedAt,
    });
    const record = {
      eventName: 'INSERT',
      dynamodb: { SequenceNumber: '1', Keys: marshall({ pk: item.pk, sk: item.sk }), NewImage: marshall(item) },
    };
    const out = await ingest({ Records: [record] } as unknown as DynamoDBStreamEvent, lambdaContext('ingest_events'));
    expect(out.batchItemFailures).toEqual([]);
    const [blob] = withMetric(emfBlobs(lines), 'IngestedEvents');
    expect(blob!._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: 'Analytics', Dimensions: [['service']] });
    expect(blob).toMatchObject({ IngestedEvents: 1 });
    expect(blob!.IngestionLag).toBeGreaterThanOrEqual(5_000);
    expect(blob!.IngestionLag).toBeLessThan(60_000);
  });
});
