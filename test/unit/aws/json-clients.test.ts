import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as sdk_kms from '@aws-sdk/client-kms';
import * as sdk_sqs from '@aws-sdk/client-sqs';
import * as sdk from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as lite from '#shared/aws/dynamodb.ts';
import * as lite_kms from '#shared/aws/kms.ts';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '#shared/aws/sqs.ts';
import { awsServiceEndpoint } from '#shared/config.ts';

/**
 * The light DynamoDB and SQS clients against a local server that records each request and answers
 * what the test queues up (else `{}`): the bytes sent, the answers read, the errors and the attempts.
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
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
afterEach(() => {
  seen.length = 0;
  answers = [];
  vi.restoreAllMocks();
});

const limits = { maxAttempts: 3, connectionTimeoutMs: 1_000, requestTimeoutMs: 2_000 };
const light = () => new lite.DynamoDBDocumentClient({ ...limits, endpoint: endpoint, region: 'us-east-1' });
const theSdk = () =>
  sdk.DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );

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
  ss: new Set(['a', 'b']),
  ns: new Set([1, 2.5]),
  bs: new Set([new Uint8Array([1]), new Uint8Array([2, 3])]),
  list: [1, 'two', null, [3], { four: 4, gone: undefined }],
  map: { a: { b: { c: [new Uint8Array([9])] } }, s: new Set(['x']) },
  emptyList: [],
  emptyMap: {},
};

/** What both clients send for `input`, and what each reads from `answer`. */
async function both<I, O>(
  make: { lite: new (input: I) => lite.DocumentCommand<I, O>; sdk: new (input: never) => object },
  input: I,
  answer: unknown,
) {
  answers = [
    { status: 200, body: answer },
    { status: 200, body: answer },
  ];
  const ours = await light().send(new make.lite(input));
  const theirs = await (theSdk().send as (c: object) => Promise<Record<string, unknown>>)(new make.sdk(input as never));
  const [a, b] = seen.splice(0);
  const read: [Record<string, any>, Record<string, any>] = [
    { ...ours, $metadata: undefined },
    { ...theirs, $metadata: undefined },
  ];
  return { sent: [a!, b!] as const, read };
}

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
  ss: { SS: ['a', 'b'] },
  ns: { NS: ['1', '2.5'] },
  bs: { BS: ['AQ==', 'AgM='] },
  list: { L: [{ N: '1' }, { S: 'two' }, { NULL: true }, { L: [{ N: '3' }] }, { M: { four: { N: '4' } } }] },
  map: { M: { a: { M: { b: { M: { c: { L: [{ B: 'CQ==' }] } } } } }, s: { SS: ['x'] } } },
  emptyList: { L: [] },
  emptyMap: { M: {} },
};

const PAIRS = {
  GetCommand: { lite: lite.GetCommand, sdk: sdk.GetCommand },
  PutCommand: { lite: lite.PutCommand, sdk: sdk.PutCommand },
  UpdateCommand: { lite: lite.UpdateCommand, sdk: sdk.UpdateCommand },
  DeleteCommand: { lite: lite.DeleteCommand, sdk: sdk.DeleteCommand },
  QueryCommand: { lite: lite.QueryCommand, sdk: sdk.QueryCommand },
  ScanCommand: { lite: lite.ScanCommand, sdk: sdk.ScanCommand },
  BatchGetCommand: { lite: lite.BatchGetCommand, sdk: sdk.BatchGetCommand },
  BatchWriteCommand: { lite: lite.BatchWriteCommand, sdk: sdk.BatchWriteCommand },
  TransactWriteCommand: { lite: lite.TransactWriteCommand, sdk: sdk.TransactWriteCommand },
};

describe('DynamoDB document client (shared/aws/dynamodb.ts)', () => {
  it('sends each of the nine operations as @aws-sdk/lib-dynamodb does, and reads their answers the same', async () => {
    const key = { pk: 'P#1', sk: 'S#é' };
    const values = { ':v': ITEM.map, ':n': 1, ':gone': undefined, ':s': new Set(['x']) };
    const { pk: _pk, sk: _sk, gone: _gone, ...native } = ITEM;
    const cases: [keyof typeof PAIRS, unknown, unknown][] = [
      ['GetCommand', { TableName: 't', Key: key, ConsistentRead: true }, { Item: ITEM_ON_WIRE }],
      ['PutCommand', { TableName: 't', Item: ITEM, ConditionExpression: 'attribute_not_exists(pk)' }, {}],
      [
        'UpdateCommand',
        {
          TableName: 't',
          Key: key,
          UpdateExpression: 'SET #a = :v ADD n :n, s :s',
          ExpressionAttributeNames: { '#a': 'a' },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        },
        { Attributes: ITEM_ON_WIRE },
      ],
      ['DeleteCommand', { TableName: 't', Key: key, ReturnValues: 'ALL_OLD' }, { Attributes: ITEM_ON_WIRE }],
      [
        'QueryCommand',
        {
          TableName: 't',
          IndexName: 'i',
          KeyConditionExpression: 'pk = :n',
          ExpressionAttributeValues: { ':n': 1 },
          ExclusiveStartKey: key,
          Limit: 5,
          ScanIndexForward: false,
        },
        { Items: [ITEM_ON_WIRE, { pk: { S: 'x' } }], Count: 2, ScannedCount: 3, LastEvaluatedKey: ITEM_ON_WIRE },
      ],
      ['ScanCommand', { TableName: 't', Segment: 0, TotalSegments: 2 }, { Items: [], Count: 0 }],
      [
        'BatchGetCommand',
        { RequestItems: { t: { Keys: [key, { pk: 'a', sk: 'b' }], ProjectionExpression: 'pk' } } },
        { Responses: { t: [ITEM_ON_WIRE] }, UnprocessedKeys: { t: { Keys: [{ pk: { S: 'a' }, sk: { S: 'b' } }] } } },
      ],
      [
        'BatchWriteCommand',
        { RequestItems: { t: [{ PutRequest: { Item: ITEM } }, { DeleteRequest: { Key: key } }] } },
        {
          UnprocessedItems: {
            t: [{ PutRequest: { Item: ITEM_ON_WIRE } }, { DeleteRequest: { Key: { pk: { S: 'P' } } } }],
          },
        },
      ],
      [
        'TransactWriteCommand',
        {
          TransactItems: [
            {
              ConditionCheck: {
                TableName: 't',
                Key: key,
                ConditionExpression: 'n = :n',
                ExpressionAttributeValues: { ':n': 2 },
              },
            },
            { Put: { TableName: 't', Item: ITEM } },
            { Delete: { TableName: 't', Key: key } },
            { Update: { TableName: 't', Key: key, UpdateExpression: 'SET a = :v', ExpressionAttributeValues: values } },
          ],
        },
        {},
      ],
    ];
    for (const [name, input, answer] of cases) {
      const { sent, read } = await both(PAIRS[name] as never, input as never, answer);
      expect(sent[0].target, name).toBe(sent[1].target);
      // TransactWriteItems carries an idempotency token of its own per call.
      const token = ({ ClientRequestToken }: { ClientRequestToken?: string }) => ClientRequestToken?.length;
      expect(token(sent[0].body as object), name).toBe(token(sent[1].body as object));
      const withoutToken = (b: unknown) => ({ ...(b as object), ClientRequestToken: undefined });
      expect(withoutToken(sent[0].body), name).toEqual(withoutToken(sent[1].body));
      expect(sent[0].headers['content-type'], name).toBe(sent[1].headers['content-type']);
      expect(read[0], name).toEqual(read[1]);
    }
    // Not vacuous: the item went out as DynamoDB's JSON and came back as the values it was made of.
    const { sent, read } = await both(
      { lite: lite.GetCommand, sdk: sdk.GetCommand },
      { TableName: 't', Key: key },
      { Item: ITEM_ON_WIRE },
    );
    expect(sent[0].target).toBe('DynamoDB_20120810.GetItem');
    expect(read[0].Item).toEqual({ ...key, ...native });
    const put = await both({ lite: lite.PutCommand, sdk: sdk.PutCommand }, { TableName: 't', Item: ITEM }, {});
    expect((put.sent[0].body as { Item: unknown }).Item).toEqual(ITEM_ON_WIRE);
  });

  it('signs with the environment credentials for the configured region', async () => {
    await light().send(new lite.GetCommand({ TableName: 't', Key: { pk: 'a' } }));
    expect(seen[0]!.headers.authorization).toMatch(
      new RegExp(
        `^AWS4-HMAC-SHA256 Credential=${process.env.AWS_ACCESS_KEY_ID}/\\d{8}/us-east-1/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=[0-9a-f]{64}$`,
      ),
    );
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
    const cancelled = (await light()
      .send(new lite.TransactWriteCommand({ TransactItems: [] }))
      .catch((e: unknown) => e)) as Record<string, any>;
    expect(cancelled).toBeInstanceOf(Error);
    expect(cancelled.name).toBe('TransactionCanceledException');
    expect(cancelled.message).toMatch(/^Transaction cancelled/);
    expect(cancelled.$metadata.httpStatusCode).toBe(400);
    expect(cancelled.CancellationReasons.map((r: { Code: string }) => r.Code)).toEqual([
      'None',
      'ConditionalCheckFailed',
    ]);
    const refused = (await light()
      .send(new lite.PutCommand({ TableName: 't', Item: { pk: 'a' } }))
      .catch((e: unknown) => e)) as Record<string, any>;
    expect([refused.name, refused.message]).toEqual([
      'ValidationException',
      'Item size has exceeded the maximum allowed size',
    ]);
    expect(seen).toHaveLength(2); // neither is retried
  });

  it('retries 5xx and throttling up to maxAttempts, then answers or throws the last error', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0); // no wait between attempts
    const throttled = {
      status: 400,
      body: { __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'slow down' },
    };
    answers = [
      { status: 500, body: { __type: 'InternalServerError' } },
      throttled,
      { status: 200, body: { Item: { pk: { S: 'a' } } } },
    ];
    const out = await light().send(new lite.GetCommand({ TableName: 't', Key: { pk: 'a' } }));
    expect(out.Item).toEqual({ pk: 'a' });
    expect(seen).toHaveLength(3);

    seen.length = 0;
    answers = [throttled, { status: 503, body: {} }, throttled, { status: 200, body: {} }];
    const error = (await light()
      .send(new lite.GetCommand({ TableName: 't', Key: { pk: 'a' } }))
      .catch((e: unknown) => e)) as Record<string, any>;
    expect(error.name).toBe('ThrottlingException');
    expect(error.$metadata).toMatchObject({ httpStatusCode: 400, attempts: 3 });
    expect(seen).toHaveLength(3);
  });

  it('aborts an attempt past its request timeout (a TimeoutError, retried), and stops at once on an abort signal', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    answers = [
      { status: 200, body: {}, hang: true },
      { status: 200, body: {}, hang: true },
    ];
    const client = new lite.DynamoDBDocumentClient({ ...limits, maxAttempts: 2, requestTimeoutMs: 100, endpoint });
    const timedOut = (await client
      .send(new lite.GetCommand({ TableName: 't', Key: { pk: 'a' } }))
      .catch((e: unknown) => e)) as Error;
    expect(timedOut.name).toBe('TimeoutError');
    expect(seen).toHaveLength(2);

    seen.length = 0;
    answers = [{ status: 200, body: {}, hang: true }];
    const controller = new AbortController();
    const pending = light().send(new lite.GetCommand({ TableName: 't', Key: { pk: 'a' } }), {
      abortSignal: controller.signal,
    });
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    controller.abort();
    expect(((await pending.catch((e: unknown) => e)) as Error).name).toBe('AbortError');
    expect(seen).toHaveLength(1);
  });

  it('retries a refused connection (ECONNREFUSED) and then throws it as Node reports it', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const client = new lite.DynamoDBDocumentClient({ ...limits, endpoint: 'http://127.0.0.1:9' });
    const error = (await client
      .send(new lite.GetCommand({ TableName: 't', Key: { pk: 'a' } }))
      .catch((e: unknown) => e)) as {
      code?: string;
    };
    expect(error.code).toBe('ECONNREFUSED');
  });
});

describe('SQS client (shared/aws/sqs.ts)', () => {
  it('speaks AWS JSON 1.0 to SQS: SendMessage and ReceiveMessage in the SDK shapes', async () => {
    const sqs = new SQSClient({ ...limits, endpoint });
    answers = [
      { status: 200, body: { MessageId: 'm1', MD5OfMessageBody: 'x' } },
      {
        status: 200,
        body: {
          Messages: [{ MessageId: 'm1', ReceiptHandle: 'r', Body: 'hi', Attributes: { ApproximateReceiveCount: '2' } }],
        },
      },
    ];
    const sent = await sqs.send(
      new SendMessageCommand({ QueueUrl: `${endpoint}/q`, MessageBody: 'hi', DelaySeconds: 5 }),
    );
    expect(sent.MessageId).toBe('m1');
    const received = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: `${endpoint}/q`,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    expect(received.Messages?.[0]).toMatchObject({
      ReceiptHandle: 'r',
      Body: 'hi',
      Attributes: { ApproximateReceiveCount: '2' },
    });
    expect(seen.map((s) => [s.target, s.headers['content-type'], s.headers['x-amzn-query-mode'], s.body])).toEqual([
      [
        'AmazonSQS.SendMessage',
        'application/x-amz-json-1.0',
        'true',
        { QueueUrl: `${endpoint}/q`, MessageBody: 'hi', DelaySeconds: 5 },
      ],
      [
        'AmazonSQS.ReceiveMessage',
        'application/x-amz-json-1.0',
        'true',
        { QueueUrl: `${endpoint}/q`, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] },
      ],
    ]);
    expect(seen[0]!.headers.authorization).toMatch(/\/us-east-1\/sqs\/aws4_request/);
  });
});

describe('SQS client against @aws-sdk/client-sqs', () => {
  it('sends the four calls as the SDK does and reads their answers the same', async () => {
    const ours = new SQSClient({ ...limits, endpoint });
    const theirs = new sdk_sqs.SQSClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const md5 = (s: string) => createHash('md5').update(s).digest('hex');
    const QueueUrl = `${endpoint}/000000000000/q`;
    const cases: [string, object, object][] = [
      [
        'SendMessage',
        { QueueUrl, MessageBody: 'hé', DelaySeconds: 3 },
        { MessageId: 'm', MD5OfMessageBody: md5('hé') },
      ],
      [
        'ReceiveMessage',
        { QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageSystemAttributeNames: ['All'] },
        {
          Messages: [
            {
              MessageId: 'm',
              ReceiptHandle: 'r',
              Body: 'hé',
              MD5OfBody: md5('hé'),
              Attributes: { ApproximateReceiveCount: '3' },
            },
          ],
        },
      ],
      ['DeleteMessage', { QueueUrl, ReceiptHandle: 'r' }, {}],
      ['ChangeMessageVisibility', { QueueUrl, ReceiptHandle: 'r', VisibilityTimeout: 30 }, {}],
    ];
    const LITE = { SendMessageCommand, ReceiveMessageCommand, DeleteMessageCommand, ChangeMessageVisibilityCommand };
    const SDK = {
      SendMessageCommand: sdk_sqs.SendMessageCommand,
      ReceiveMessageCommand: sdk_sqs.ReceiveMessageCommand,
      DeleteMessageCommand: sdk_sqs.DeleteMessageCommand,
      ChangeMessageVisibilityCommand: sdk_sqs.ChangeMessageVisibilityCommand,
    };
    for (const [op, input, answer] of cases) {
      const name = `${op}Command` as keyof typeof LITE;
      answers = [
        { status: 200, body: answer },
        { status: 200, body: answer },
      ];
      const Lite = LITE[name] as unknown as new (i: object) => SendMessageCommand;
      const a: object = await ours.send(new Lite(input));
      const Sdk = SDK[name] as unknown as new (i: object) => object;
      const b = await (theirs.send as (c: object) => Promise<object>)(new Sdk(input));
      const [x, y] = seen.splice(0);
      expect([x!.target, x!.headers['content-type'], x!.headers['x-amzn-query-mode'], x!.body], op).toEqual([
        y!.target,
        y!.headers['content-type'],
        y!.headers['x-amzn-query-mode'],
        y!.body,
      ]);
      expect({ ...a, $metadata: undefined }, op).toEqual({ ...b, $metadata: undefined });
    }
  });
});

describe('awsServiceEndpoint (shared/config.ts)', () => {
  it("reads the SDK's variables: the service's own endpoint, then the general one, then AWS's regional endpoint", () => {
    const at = (env: NodeJS.ProcessEnv, service: 'dynamodb' | 'sqs' = 'dynamodb') => {
      const { url, region } = awsServiceEndpoint(service, env);
      return `${url.href} ${region}`;
    };
    expect(at({ AWS_REGION: 'eu-west-1' })).toBe('https://dynamodb.eu-west-1.amazonaws.com/ eu-west-1');
    expect(at({ AWS_REGION: 'cn-north-1' }, 'sqs')).toBe('https://sqs.cn-north-1.amazonaws.com.cn/ cn-north-1');
    expect(at({ AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL: 'http://127.0.0.1:1' })).toBe(
      'http://127.0.0.1:1/ eu-west-1',
    );
    expect(
      at({
        AWS_ENDPOINT_URL: 'http://127.0.0.1:1',
        AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:2',
        AWS_ENDPOINT_URL_SQS: 'http://x:3',
      }),
    ).toBe('http://127.0.0.1:2/ us-east-1');
    expect(() => awsServiceEndpoint('sqs', {})).toThrow(/AWS_REGION is not set/);
  });
});

describe('KMS client (shared/aws/kms.ts)', () => {
  it('sends GenerateDataKey and Decrypt as @aws-sdk/client-kms does (AWS JSON 1.1, blobs in base64) and reads the blobs back', async () => {
    const ours = new lite_kms.KMSClient({ ...limits, endpoint });
    const theirs = new sdk_kms.KMSClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const key = Buffer.from('0123456789abcdef0123456789abcdef');
    const generated = {
      KeyId: 'k',
      Plaintext: key.toString('base64'),
      CiphertextBlob: Buffer.from('wrapped').toString('base64'),
    };
    const context = { organization_id: 'o', batch_export_id: 'e' };
    const generate = { KeyId: 'k', KeySpec: 'AES_256', EncryptionContext: context } as const;
    const decrypt = { CiphertextBlob: Buffer.from('wrapped'), EncryptionContext: context, KeyId: 'k' };
    answers = [
      { status: 200, body: generated },
      { status: 200, body: generated },
      { status: 200, body: { KeyId: 'k', Plaintext: key.toString('base64') } },
      { status: 200, body: { KeyId: 'k', Plaintext: key.toString('base64') } },
    ];
    const a = await ours.send(new lite_kms.GenerateDataKeyCommand(generate));
    const b = await theirs.send(new sdk_kms.GenerateDataKeyCommand(generate));
    const c = await ours.send(new lite_kms.DecryptCommand(decrypt));
    const d = await theirs.send(new sdk_kms.DecryptCommand(decrypt));
    expect(Buffer.from(a.Plaintext!)).toEqual(key);
    expect(Buffer.from(a.CiphertextBlob!)).toEqual(Buffer.from(b.CiphertextBlob!));
    expect(Buffer.from(c.Plaintext!)).toEqual(Buffer.from(d.Plaintext!));
    const [g1, g2, d1, d2] = seen;
    expect([g1!.target, d1!.target]).toEqual(['TrentService.GenerateDataKey', 'TrentService.Decrypt']);
    expect(g1!.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect([g1!.target, g1!.headers['content-type'], g1!.body]).toEqual([
      g2!.target,
      g2!.headers['content-type'],
      g2!.body,
    ]);
    expect([d1!.target, d1!.body]).toEqual([d2!.target, d2!.body]);
    expect((d1!.body as { CiphertextBlob: string }).CiphertextBlob).toBe(Buffer.from('wrapped').toString('base64'));
  });
});
