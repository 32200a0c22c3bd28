import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as Dynamo from '#shared/aws/dynamodb.ts';
import type * as Kms from '#shared/aws/kms.ts';
import type * as Options from '#shared/aws/options.ts';
import type * as Sqs from '#shared/aws/sqs.ts';
import { DYNAMODB_TIMEOUTS } from '#shared/config.ts';

/**
 * The service's AWS clients (shared/aws/) as built for a function, against a local server that records
 * each request and answers what the test queues up (else `{}`): what goes on the wire, what is read
 * back, the errors, attempts and timeouts. The clients find the server the way the local runtime points
 * them at DynamoDB Local and the local SQS: AWS_ENDPOINT_URL_<SERVICE>, read by the SDK itself.
 */
interface Seen {
  target: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}
let server: Server;
let endpoint: string;
const seen: Seen[] = [];
let answers: { status: number; body: unknown; hang?: boolean }[] = [];
let dynamo: typeof Dynamo;
let sqsModule: typeof Sqs;
let kmsModule: typeof Kms;
let options: typeof Options;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ target: String(req.headers['x-amz-target']), headers: req.headers, body: JSON.parse(body) });
      const answer = answers.shift() ?? { status: 200, body: {} };
      if (answer.hang) return;
      res.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', endpoint);
  vi.stubEnv('AWS_ENDPOINT_URL_SQS', endpoint);
  vi.stubEnv('AWS_ENDPOINT_URL_KMS', endpoint);
  vi.resetModules(); // fresh clients, built against this server
  dynamo = await import('#shared/aws/dynamodb.ts');
  sqsModule = await import('#shared/aws/sqs.ts');
  kmsModule = await import('#shared/aws/kms.ts');
  options = await import('#shared/aws/options.ts');
});
afterAll(async () => {
  vi.unstubAllEnvs();
  vi.resetModules();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
afterEach(() => {
  seen.length = 0;
  answers = [];
  vi.restoreAllMocks();
});

const table = () => dynamo.documentClient('api');

/** Every kind of value an item may hold, nested too; `gone` is left out (removeUndefinedValues). */
const ITEM = {
  pk: 'P#1',
  sk: 'S#é',
  empty: '',
  n: 42,
  neg: -1.5,
  big: 12345678901234,
  t: true,
  f: false,
  nil: null,
  gone: undefined,
  bin: new Uint8Array([0, 1, 254, 255]),
  gz: Buffer.from([31, 139, 8]),
  ss: new Set(['a', 'b']),
  ns: new Set([1, 2.5]),
  bs: new Set([new Uint8Array([1]), new Uint8Array([2, 3])]),
  list: [1, 'two', null, [3], { four: 4, gone: undefined }],
  map: { a: { b: { c: [new Uint8Array([9])] } }, s: new Set(['x']) },
  emptyList: [],
  emptyMap: {},
};

/**
 * ITEM as DynamoDB stores it: byte for byte what the hand-written client this replaced sent (its test
 * compared it with @aws-sdk/lib-dynamodb's output), so items written before and after read the same.
 */
const ITEM_ON_WIRE = {
  pk: { S: 'P#1' },
  sk: { S: 'S#é' },
  empty: { S: '' },
  n: { N: '42' },
  neg: { N: '-1.5' },
  big: { N: '12345678901234' },
  t: { BOOL: true },
  f: { BOOL: false },
  nil: { NULL: true },
  bin: { B: 'AAH+/w==' },
  gz: { B: 'H4sI' },
  ss: { SS: ['a', 'b'] },
  ns: { NS: ['1', '2.5'] },
  bs: { BS: ['AQ==', 'AgM='] },
  list: { L: [{ N: '1' }, { S: 'two' }, { NULL: true }, { L: [{ N: '3' }] }, { M: { four: { N: '4' } } }] },
  map: { M: { a: { M: { b: { M: { c: { L: [{ B: 'CQ==' }] } } } } }, s: { SS: ['x'] } } },
  emptyList: { L: [] },
  emptyMap: { M: {} },
};

describe('DynamoDB document client (shared/aws/dynamodb.ts)', () => {
  it('sends each operation the stores use with items in DynamoDB JSON, and reads the answers back as values', async () => {
    const key = { pk: 'P#1', sk: 'S#é' };
    const { gone: _gone, ...native } = ITEM;
    answers = [{ status: 200, body: {} }];
    await table().send(new dynamo.PutCommand({ TableName: 't', Item: ITEM }));
    expect(seen[0]!.target).toBe('DynamoDB_20120810.PutItem');
    expect(seen[0]!.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(seen[0]!.body).toEqual({ TableName: 't', Item: ITEM_ON_WIRE });

    answers = [{ status: 200, body: { Item: ITEM_ON_WIRE } }];
    const got = await table().send(new dynamo.GetCommand({ TableName: 't', Key: key, ConsistentRead: true }));
    expect(seen[1]!.body).toEqual({
      TableName: 't',
      Key: { pk: { S: 'P#1' }, sk: { S: 'S#é' } },
      ConsistentRead: true,
    });
    const { gz, ...rest } = native;
    expect({ ...got.Item, gz: Buffer.from(got.Item!.gz) }).toEqual({ ...rest, gz });

    seen.length = 0;
    const values = { ':v': ITEM.map, ':n': 1, ':gone': undefined, ':s': new Set(['x']) };
    const wireValues = { ':v': ITEM_ON_WIRE.map, ':n': { N: '1' }, ':s': { SS: ['x'] } };
    const wireKey = { pk: { S: 'P#1' }, sk: { S: 'S#é' } };
    const cases: [object, string, unknown][] = [
      [
        new dynamo.UpdateCommand({
          TableName: 't',
          Key: key,
          UpdateExpression: 'SET #a = :v ADD n :n, s :s',
          ExpressionAttributeNames: { '#a': 'a' },
          ExpressionAttributeValues: values,
        }),
        'UpdateItem',
        {
          TableName: 't',
          Key: wireKey,
          UpdateExpression: 'SET #a = :v ADD n :n, s :s',
          ExpressionAttributeNames: { '#a': 'a' },
          ExpressionAttributeValues: wireValues,
        },
      ],
      [new dynamo.DeleteCommand({ TableName: 't', Key: key }), 'DeleteItem', { TableName: 't', Key: wireKey }],
      [
        new dynamo.QueryCommand({
          TableName: 't',
          KeyConditionExpression: 'pk = :n',
          ExpressionAttributeValues: { ':n': 1 },
          ExclusiveStartKey: key,
        }),
        'Query',
        {
          TableName: 't',
          KeyConditionExpression: 'pk = :n',
          ExpressionAttributeValues: { ':n': { N: '1' } },
          ExclusiveStartKey: wireKey,
        },
      ],
      [new dynamo.ScanCommand({ TableName: 't', Segment: 0, TotalSegments: 2 }), 'Scan', null],
      [
        new dynamo.BatchGetCommand({ RequestItems: { t: { Keys: [key] } } }),
        'BatchGetItem',
        { RequestItems: { t: { Keys: [wireKey] } } },
      ],
      [
        new dynamo.BatchWriteCommand({
          RequestItems: { t: [{ PutRequest: { Item: ITEM } }, { DeleteRequest: { Key: key } }] },
        }),
        'BatchWriteItem',
        { RequestItems: { t: [{ PutRequest: { Item: ITEM_ON_WIRE } }, { DeleteRequest: { Key: wireKey } }] } },
      ],
    ];
    for (const [command, operation, body] of cases) {
      await table().send(command as never);
      const sent = seen.shift()!;
      expect(sent.target, operation).toBe(`DynamoDB_20120810.${operation}`);
      if (body) expect(sent.body, operation).toEqual(body);
    }

    // A transaction carries an idempotency token, the same on each attempt (a retried commit succeeds again).
    await table().send(
      new dynamo.TransactWriteCommand({
        TransactItems: [{ Put: { TableName: 't', Item: ITEM } }, { Delete: { TableName: 't', Key: key } }],
      }),
    );
    const transaction = seen.shift()!.body as { ClientRequestToken: string; TransactItems: unknown };
    expect(transaction.ClientRequestToken).toHaveLength(36);
    expect(transaction.TransactItems).toEqual([
      { Put: { TableName: 't', Item: ITEM_ON_WIRE } },
      { Delete: { TableName: 't', Key: wireKey } },
    ]);

    // Answers: items of Query, BatchGetItem's Responses and unprocessed items come back as values.
    answers = [
      { status: 200, body: { Items: [ITEM_ON_WIRE], Count: 1, LastEvaluatedKey: wireKey } },
      { status: 200, body: { Responses: { t: [ITEM_ON_WIRE] }, UnprocessedKeys: { t: { Keys: [wireKey] } } } },
      { status: 200, body: { UnprocessedItems: { t: [{ DeleteRequest: { Key: wireKey } }] } } },
    ];
    const page = await table().send(new dynamo.QueryCommand({ TableName: 't' }));
    expect([page.Items?.[0]?.pk, page.Count, page.LastEvaluatedKey]).toEqual(['P#1', 1, key]);
    const batch = await table().send(new dynamo.BatchGetCommand({ RequestItems: { t: { Keys: [key] } } }));
    expect([batch.Responses?.t?.[0]?.sk, batch.UnprocessedKeys?.t?.Keys]).toEqual(['S#é', [key]]);
    const writes = await table().send(new dynamo.BatchWriteCommand({ RequestItems: { t: [] } }));
    expect(writes.UnprocessedItems).toEqual({ t: [{ DeleteRequest: { Key: key } }] });
  });

  it('refuses values DynamoDB cannot store exactly, before sending anything (as the hand-written client did)', async () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    const refused = async (v: unknown) =>
      (
        (await table()
          .send(new dynamo.PutCommand({ TableName: 't', Item: { pk: 'x', v } }))
          .catch((e: unknown) => e)) as Error
      ).message;
    expect(await refused(new Point(1, 2))).toMatch(/convertClassInstanceToMap/);
    expect(await refused(new Date(0))).toMatch(/Unsupported type passed/);
    expect(await refused(2 ** 60)).toMatch(/greater than Number.MAX_SAFE_INTEGER/);
    expect(await refused(Number.NaN)).toMatch(/Special numeric value NaN/);
    expect(await refused(new Set())).toMatch(/non-empty set/);
    expect(seen).toEqual([]);
  });

  it("throws the service's error: its name, message, status and fields (CancellationReasons)", async () => {
    answers = [
      {
        status: 400,
        body: {
          __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
          Message:
            'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]',
          CancellationReasons: [
            { Code: 'None' },
            { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
          ],
        },
      },
      {
        status: 400,
        body: {
          __type: 'com.amazon.coral.validate#ValidationException',
          message: 'Item size has exceeded the maximum allowed size',
        },
      },
    ];
    const cancelled = (await table()
      .send(new dynamo.TransactWriteCommand({ TransactItems: [] }))
      .catch((e: unknown) => e)) as Record<string, any>;
    expect(cancelled).toBeInstanceOf(Error);
    expect(cancelled.name).toBe('TransactionCanceledException');
    expect(cancelled.message).toMatch(/^Transaction cancelled/);
    expect(cancelled.$metadata.httpStatusCode).toBe(400);
    expect(cancelled.CancellationReasons.map((r: { Code: string }) => r.Code)).toEqual([
      'None',
      'ConditionalCheckFailed',
    ]);
    const refused = (await table()
      .send(new dynamo.PutCommand({ TableName: 't', Item: { pk: 'a' } }))
      .catch((e: unknown) => e)) as Record<string, any>;
    expect([refused.name, refused.message]).toEqual([
      'ValidationException',
      'Item size has exceeded the maximum allowed size',
    ]);
    expect(seen).toHaveLength(2); // neither is retried
  });

  it('retries 5xx and throttling up to the kind’s maxAttempts, then answers or throws the last error', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0); // no wait between attempts
    expect(DYNAMODB_TIMEOUTS.api.maxAttempts).toBe(2);
    const throttled = {
      status: 400,
      body: { __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'slow down' },
    };
    answers = [
      { status: 500, body: { __type: 'InternalServerError' } },
      { status: 200, body: { Item: { pk: { S: 'a' } } } },
    ];
    const out = await table().send(new dynamo.GetCommand({ TableName: 't', Key: { pk: 'a' } }));
    expect(out.Item).toEqual({ pk: 'a' });
    expect(seen).toHaveLength(2);

    seen.length = 0;
    answers = [throttled, { status: 503, body: {} }, { status: 200, body: {} }];
    const error = (await table()
      .send(new dynamo.GetCommand({ TableName: 't', Key: { pk: 'a' } }))
      .catch((e: unknown) => e)) as Record<string, any>;
    expect(error.$metadata).toMatchObject({ httpStatusCode: 503, attempts: 2 });
    expect(seen).toHaveLength(2);
  });
});

describe('client options (shared/aws/options.ts)', () => {
  const settings = {
    connectionTimeoutMs: 1_000,
    requestTimeoutMs: 100,
    maxAttempts: 2,
    retryMode: 'standard' as const,
  };

  it('aborts an attempt past its request timeout (a TimeoutError, retried), and stops at once on an abort signal', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    answers = [
      { status: 200, body: {}, hang: true },
      { status: 200, body: {}, hang: true },
    ];
    const client = dynamo.DynamoDBDocumentClient.from(new DynamoDBClient(options.clientOptions(settings)));
    const timedOut = (await client
      .send(new dynamo.GetCommand({ TableName: 't', Key: { pk: 'a' } }))
      .catch((e: unknown) => e)) as Error;
    expect(timedOut.name).toBe('TimeoutError');
    expect(seen).toHaveLength(2);

    seen.length = 0;
    answers = [{ status: 200, body: {}, hang: true }];
    const controller = new AbortController();
    const pending = table().send(new dynamo.GetCommand({ TableName: 't', Key: { pk: 'a' } }), {
      abortSignal: controller.signal,
    });
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    controller.abort();
    expect(((await pending.catch((e: unknown) => e)) as Error).name).toBe('AbortError');
    expect(seen).toHaveLength(1);
  });

  it('retries a refused connection (ECONNREFUSED) and then throws it as Node reports it', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const client = new DynamoDBClient({ ...options.clientOptions(settings), endpoint: 'http://127.0.0.1:9' });
    const error = (await client
      .send(new (await import('@aws-sdk/client-dynamodb')).GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } }))
      .catch((e: unknown) => e)) as { code?: string; $metadata?: { attempts?: number } };
    expect(error.code).toBe('ECONNREFUSED');
    expect(error.$metadata?.attempts).toBe(2);
  });

  it('leaves the clients untraced where X-Ray is off (the local runtime, the tests)', async () => {
    const { tracer } = await import('#shared/observability.ts');
    expect(tracer.isTracingEnabled()).toBe(false);
    const client = new DynamoDBClient({});
    expect(options.traced(client)).toBe(client);
    expect(client.middlewareStack.identify().some((m) => /xray|tracer/i.test(m))).toBe(false);
  });
});

describe('SQS client (shared/aws/sqs.ts)', () => {
  it('speaks AWS JSON 1.0 to SQS: the four calls in the shapes SQS takes, and their answers read back', async () => {
    const md5 = (s: string) => createHash('md5').update(s).digest('hex');
    const QueueUrl = `${endpoint}/000000000000/q`;
    answers = [
      { status: 200, body: { MessageId: 'm1', MD5OfMessageBody: md5('hé') } },
      {
        status: 200,
        body: {
          Messages: [
            {
              MessageId: 'm1',
              ReceiptHandle: 'r',
              Body: 'hé',
              MD5OfBody: md5('hé'),
              Attributes: { ApproximateReceiveCount: '2' },
            },
          ],
        },
      },
    ];
    const sqs = sqsModule.sqs();
    const sent = await sqs.send(new sqsModule.SendMessageCommand({ QueueUrl, MessageBody: 'hé', DelaySeconds: 5 }));
    expect(sent.MessageId).toBe('m1');
    const received = await sqs.send(
      new sqsModule.ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] }),
    );
    expect(received.Messages?.[0]).toMatchObject({
      ReceiptHandle: 'r',
      Body: 'hé',
      Attributes: { ApproximateReceiveCount: '2' },
    });
    await sqs.send(new sqsModule.DeleteMessageCommand({ QueueUrl, ReceiptHandle: 'r' }));
    await sqs.send(
      new sqsModule.ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: 'r', VisibilityTimeout: 30 }),
    );
    expect(seen.map((s) => [s.target, s.headers['content-type'], s.headers['x-amzn-query-mode'], s.body])).toEqual([
      ['AmazonSQS.SendMessage', 'application/x-amz-json-1.0', 'true', { QueueUrl, MessageBody: 'hé', DelaySeconds: 5 }],
      [
        'AmazonSQS.ReceiveMessage',
        'application/x-amz-json-1.0',
        'true',
        { QueueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] },
      ],
      ['AmazonSQS.DeleteMessage', 'application/x-amz-json-1.0', 'true', { QueueUrl, ReceiptHandle: 'r' }],
      [
        'AmazonSQS.ChangeMessageVisibility',
        'application/x-amz-json-1.0',
        'true',
        { QueueUrl, ReceiptHandle: 'r', VisibilityTimeout: 30 },
      ],
    ]);
    expect(seen[0]!.headers.authorization).toMatch(/\/us-east-1\/sqs\/aws4_request/);
  });
});

describe('KMS client (shared/aws/kms.ts)', () => {
  it('sends GenerateDataKey and Decrypt in AWS JSON 1.1 (blobs in base64) and reads the blobs back', async () => {
    const key = Buffer.from('0123456789abcdef0123456789abcdef');
    const context = { organization_id: 'o', batch_export_id: 'e' };
    answers = [
      {
        status: 200,
        body: {
          KeyId: 'k',
          Plaintext: key.toString('base64'),
          CiphertextBlob: Buffer.from('wrapped').toString('base64'),
        },
      },
      { status: 200, body: { KeyId: 'k', Plaintext: key.toString('base64') } },
    ];
    const kms = kmsModule.kms();
    const generated = await kms.send(
      new kmsModule.GenerateDataKeyCommand({ KeyId: 'k', KeySpec: 'AES_256', EncryptionContext: context }),
    );
    const opened = await kms.send(
      new kmsModule.DecryptCommand({ CiphertextBlob: Buffer.from('wrapped'), EncryptionContext: context, KeyId: 'k' }),
    );
    expect(Buffer.from(generated.Plaintext!)).toEqual(key);
    expect(Buffer.from(generated.CiphertextBlob!)).toEqual(Buffer.from('wrapped'));
    expect(Buffer.from(opened.Plaintext!)).toEqual(key);
    expect(seen.map((s) => [s.target, s.headers['content-type'], s.body])).toEqual([
      [
        'TrentService.GenerateDataKey',
        'application/x-amz-json-1.1',
        { KeyId: 'k', KeySpec: 'AES_256', EncryptionContext: context },
      ],
      [
        'TrentService.Decrypt',
        'application/x-amz-json-1.1',
        { CiphertextBlob: Buffer.from('wrapped').toString('base64'), EncryptionContext: context, KeyId: 'k' },
      ],
    ]);
  });
});
