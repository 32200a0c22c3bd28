/**
 * A request meter between the handlers and the local stand-ins (DynamoDB Local, SQS, S3): plain HTTP
 * proxies in front of each (startLocalStack's `front`), so it counts whatever client the handlers use
 * and adds nothing to the ingest path itself. What it counts, per DynamoDB call kind:
 *
 * - PutItem, UpdateItem, DeleteItem, BatchWriteItem, GetItem, Query, Scan, BatchGetItem: the units
 *   DynamoDB Local reports when asked (the meter adds `ReturnConsumedCapacity: INDEXES` to the
 *   request): 1 write unit per started KB of the item (an update: of the larger of before and after),
 *   the same again per GSI it changes; 0.5 read unit per started 4 KB read eventually consistent, 1
 *   strongly (checked against DynamoDB Local 2.x: it applies these rules, GSIs included).
 * - TransactWriteItems: DynamoDB Local reports a transaction as if it held one item (2 units, 2 more
 *   per index: the same for 1 item or 50), so the meter counts by AWS's rules itself: 2 units per
 *   started KB of each item written or checked, 1 per index entry a Put writes (a Put's size from its
 *   item; an Update's, Delete's or ConditionCheck's from its key and values: the worker's are counters
 *   and markers, under 1 KB).
 * - A write refused by its condition (ConditionalCheckFailedException): AWS still charges it; DynamoDB
 *   Local reports nothing, so it counts 1 unit per started KB of the request's item (at least 1).
 *   A cancelled transaction counts 2 units per item (what it would have cost).
 * - Stream reads are not counted: Lambda's reads of a DynamoDB stream for a trigger are free.
 *
 * SQS: messages sent (SendMessage, SendMessageBatch entries) and their billed 64 KB chunks; receives
 * and deletes the handlers make themselves. S3: PUT/POST/COPY/DELETE (class A, priced per 1,000) and
 * GET/HEAD/LIST (class B) requests, and the bytes put.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';

export type StandIn = 'dynamodb' | 'sqs' | 's3';

export interface Counts {
  /** Write and read request units (on-demand billing). */
  wcu: number;
  rcu: number;
  /** DynamoDB calls by operation, and the write and read units of each. */
  dynamodbCalls: Record<string, number>;
  wcuByOp: Record<string, number>;
  rcuByOp: Record<string, number>;
  /** Items written (put, updated or deleted), transactions' items included. */
  itemsWritten: number;
  sqsMessagesSent: number;
  /** SQS requests billed for the sends (each 64 KB chunk of a request is one). */
  sqsSendRequests: number;
  /** Receives and deletes the handlers made (Lambda's own pollers are not in front of the meter). */
  sqsOtherRequests: number;
  s3ClassA: number;
  s3ClassB: number;
  s3BytesPut: number;
  /** When the last request through the meter ended (performance.now()). */
  lastRequestAt: number;
}

export const emptyCounts = (): Counts => ({
  wcu: 0,
  rcu: 0,
  dynamodbCalls: {},
  wcuByOp: {},
  rcuByOp: {},
  itemsWritten: 0,
  sqsMessagesSent: 0,
  sqsSendRequests: 0,
  sqsOtherRequests: 0,
  s3ClassA: 0,
  s3ClassB: 0,
  s3BytesPut: 0,
  lastRequestAt: 0,
});

const addMaps = (a: Record<string, number>, b: Record<string, number>) => {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return out;
};

/** Two counts added up (a shape measured in rounds, capture and worker together). */
export const addCounts = (a: Counts, b: Counts): Counts => ({
  wcu: a.wcu + b.wcu,
  rcu: a.rcu + b.rcu,
  dynamodbCalls: addMaps(a.dynamodbCalls, b.dynamodbCalls),
  wcuByOp: addMaps(a.wcuByOp, b.wcuByOp),
  rcuByOp: addMaps(a.rcuByOp, b.rcuByOp),
  itemsWritten: a.itemsWritten + b.itemsWritten,
  sqsMessagesSent: a.sqsMessagesSent + b.sqsMessagesSent,
  sqsSendRequests: a.sqsSendRequests + b.sqsSendRequests,
  sqsOtherRequests: a.sqsOtherRequests + b.sqsOtherRequests,
  s3ClassA: a.s3ClassA + b.s3ClassA,
  s3ClassB: a.s3ClassB + b.s3ClassB,
  s3BytesPut: a.s3BytesPut + b.s3BytesPut,
  lastRequestAt: Math.max(a.lastRequestAt, b.lastRequestAt),
});

const KB = 1024;
const SQS_CHUNK = 64 * KB;

/** Operations that take ReturnConsumedCapacity. */
const CAPACITY_OPS = new Set([
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactWriteItems',
  'GetItem',
  'Query',
  'Scan',
  'BatchGetItem',
  'TransactGetItems',
]);
const WRITE_OPS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

interface Capacity {
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
  LocalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

type Json = Record<string, unknown>;

type AttributeValue = Record<string, unknown>;

/** An attribute value's size by DynamoDB's rules (strings and binaries their bytes, numbers ~1 byte per 2 digits + 1, nested 3 + 1 per element). */
function valueSize(v: AttributeValue): number {
  if ('S' in v) return Buffer.byteLength(String(v.S));
  if ('N' in v) return Math.ceil(String(v.N).replace(/^-|\.|e.*$/gi, '').length / 2) + 1;
  if ('B' in v) return Buffer.from(String(v.B), 'base64').length;
  if ('SS' in v) return (v.SS as string[]).reduce((n, x) => n + Buffer.byteLength(x), 0);
  if ('NS' in v) return (v.NS as string[]).reduce((n, x) => n + Math.ceil(x.length / 2) + 1, 0);
  if ('BS' in v) return (v.BS as string[]).reduce((n, x) => n + Buffer.from(x, 'base64').length, 0);
  if ('L' in v) return 3 + (v.L as AttributeValue[]).reduce((n, x) => n + 1 + valueSize(x), 0);
  if ('M' in v) return 3 + itemSize(v.M as Record<string, AttributeValue>) + Object.keys(v.M as object).length;
  return 1; // BOOL, NULL
}

/** An item's (or key's) size: attribute names and values. */
const itemSize = (item: unknown): number =>
  Object.entries((item ?? {}) as Record<string, AttributeValue>).reduce(
    (n, [name, v]) => n + Buffer.byteLength(name) + valueSize(v),
    0,
  );

const INDEX_KEYS = Object.values(TABLE_SCHEMA.indexes).map((i) => i.partitionKey as string);

/**
 * A transaction's write units by AWS's rules: 2 per started KB of each item written or checked, and 1
 * per started KB for each index entry a Put writes (an index's key in its item). A Put's size is its
 * item's; an Update's, Delete's or ConditionCheck's is the stored item's, which the request does not
 * show: counted as its key and values (the counters and markers it changes are small), index entries
 * it may change not counted.
 */
function transactionUnits(body: Json): number {
  return ((body.TransactItems ?? []) as Json[]).reduce((n, t) => {
    const [kind, op] = Object.entries(t)[0] as [string, Json];
    const size = kind === 'Put' ? itemSize(op.Item) : itemSize(op.Key) + itemSize(op.ExpressionAttributeValues);
    const kb = Math.max(1, Math.ceil(size / KB));
    const entries = kind === 'Put' ? INDEX_KEYS.filter((k) => k in ((op.Item ?? {}) as object)).length : 0;
    return n + 2 * kb + entries * kb;
  }, 0);
}

function itemsWritten(op: string, body: Json): number {
  if (op === 'BatchWriteItem')
    return Object.values((body.RequestItems ?? {}) as Record<string, unknown[]>).reduce((n, l) => n + l.length, 0);
  if (op === 'TransactWriteItems')
    return ((body.TransactItems ?? []) as Json[]).filter((t) => !('ConditionCheck' in t)).length;
  return 1;
}

function countDynamoDb(counts: Counts, op: string, body: Json, status: number, answer: Json): void {
  counts.dynamodbCalls[op] = (counts.dynamodbCalls[op] ?? 0) + 1;
  const write = WRITE_OPS.has(op);
  if (status === 200) {
    const reported = [answer.ConsumedCapacity ?? []].flat() as Capacity[];
    let units = 0;
    for (const c of reported) {
      // DynamoDB Local reports a transaction as if it held one item: counted here instead.
      if (op === 'TransactWriteItems') units += transactionUnits(body);
      else if (op === 'TransactGetItems') units += 2 * (c.CapacityUnits ?? 0);
      else units += c.CapacityUnits ?? 0;
    }
    if (write) {
      addWrite(counts, op, units);
      counts.itemsWritten += itemsWritten(op, body);
    } else {
      counts.rcu += units;
      counts.rcuByOp[op] = (counts.rcuByOp[op] ?? 0) + units;
    }
    return;
  }
  const error = String(answer.__type ?? '');
  if (write && error.endsWith('ConditionalCheckFailedException'))
    addWrite(counts, `${op} (condition failed)`, Math.max(1, Math.ceil(itemSize(body.Item ?? body.Key) / KB)));
  else if (error.endsWith('TransactionCanceledException'))
    addWrite(counts, `${op} (cancelled)`, transactionUnits(body));
}

function addWrite(counts: Counts, op: string, units: number): void {
  counts.wcu += units;
  counts.wcuByOp[op] = (counts.wcuByOp[op] ?? 0) + units;
}

function countSqs(counts: Counts, target: string | undefined, raw: Buffer): void {
  // JSON protocol (x-amz-target: AmazonSQS.SendMessage) or the query protocol (Action=SendMessage&...).
  const text = raw.toString();
  let action = target?.split('.').pop();
  let body: Json = {};
  if (action) body = text ? (JSON.parse(text) as Json) : {};
  else {
    const form = new URLSearchParams(text);
    action = form.get('Action') ?? '';
    body = Object.fromEntries(form);
  }
  if (action === 'SendMessage') {
    counts.sqsMessagesSent += 1;
    counts.sqsSendRequests += Math.max(1, Math.ceil(Buffer.byteLength(String(body.MessageBody ?? '')) / SQS_CHUNK));
  } else if (action === 'SendMessageBatch') {
    const entries = Array.isArray(body.Entries)
      ? (body.Entries as Json[]).map((e) => String(e.MessageBody ?? ''))
      : Object.entries(body)
          .filter(([k]) => /^SendMessageBatchRequestEntry\.\d+\.MessageBody$/.test(k))
          .map(([, v]) => String(v));
    counts.sqsMessagesSent += entries.length;
    counts.sqsSendRequests += Math.max(1, Math.ceil(entries.reduce((n, e) => n + Buffer.byteLength(e), 0) / SQS_CHUNK));
  } else counts.sqsOtherRequests += 1;
}

function countS3(counts: Counts, req: IncomingMessage, raw: Buffer): void {
  if (req.method === 'GET' || req.method === 'HEAD') counts.s3ClassB += 1;
  else {
    counts.s3ClassA += 1;
    if (req.method === 'PUT') counts.s3BytesPut += raw.length;
  }
}

const readAll = async (stream: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

export interface Meter {
  /** For startLocalStack's `front`: remembers the stand-in's endpoint, returns the meter's in front of it. */
  front(standIn: StandIn, endpoint: string): string;
  /** Counts since the last reset. */
  counts(): Counts;
  reset(): void;
  /** Resolves once no request has gone through for `quietMs` (the handlers' follow-up work is done). */
  quiet(quietMs: number, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export async function startMeter(): Promise<Meter> {
  let counts = emptyCounts();
  let inFlight = 0;
  const upstreams = new Map<StandIn, URL>();
  const servers = new Map<StandIn, Server>();

  const proxy = (standIn: StandIn) =>
    createServer(async (req, res) => {
      inFlight += 1;
      try {
        const upstream = upstreams.get(standIn);
        if (!upstream) throw new Error(`no ${standIn} behind the meter`);
        let raw = await readAll(req);
        const target = req.headers['x-amz-target'] as string | undefined;
        const op = standIn === 'dynamodb' ? (target?.split('.').pop() ?? '') : '';
        let body: Json = {};
        if (standIn === 'dynamodb' && raw.length) {
          body = JSON.parse(raw.toString()) as Json;
          // DynamoDB Local does not check signatures: the meter may ask for the units on the caller's behalf.
          if (CAPACITY_OPS.has(op)) raw = Buffer.from(JSON.stringify({ ...body, ReturnConsumedCapacity: 'INDEXES' }));
        }
        const headers = { ...req.headers, 'content-length': String(raw.length) };
        const answer = await new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>(
          (resolve, reject) => {
            const out = request(
              { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
              async (r) => resolve({ status: r.statusCode ?? 502, headers: r.headers, body: await readAll(r) }),
            );
            out.on('error', reject);
            out.end(raw);
          },
        );
        if (standIn === 'dynamodb') {
          const parsed = answer.body.length ? (JSON.parse(answer.body.toString()) as Json) : {};
          countDynamoDb(counts, op, body, answer.status, parsed);
        } else if (standIn === 'sqs') countSqs(counts, target, raw);
        else countS3(counts, req, raw);
        res.writeHead(answer.status, { ...answer.headers, 'content-length': String(answer.body.length) });
        res.end(answer.body);
      } catch (error) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`meter: ${(error as Error).message}`);
      } finally {
        inFlight -= 1;
        counts.lastRequestAt = performance.now();
      }
    });

  for (const standIn of ['dynamodb', 'sqs', 's3'] as const) {
    const server = proxy(standIn);
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.set(standIn, server);
  }

  return {
    front(standIn, endpoint) {
      upstreams.set(standIn, new URL(endpoint));
      return `http://127.0.0.1:${(servers.get(standIn)!.address() as AddressInfo).port}`;
    },
    counts: () => structuredClone(counts),
    reset() {
      counts = emptyCounts();
    },
    async quiet(quietMs, timeoutMs) {
      const started = performance.now();
      for (;;) {
        const now = performance.now();
        if (inFlight === 0 && now - counts.lastRequestAt >= quietMs) return true;
        if (now - started > timeoutMs) return false;
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async close() {
      for (const server of servers.values()) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}
