import { randomUUID } from 'node:crypto';
import { marshall, unmarshall, type NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import { JsonServiceClient, type CallOptions, type JsonServiceOptions } from './http.ts';

/**
 * DynamoDB's document client for the nine operations we use: the command classes, input and output
 * shapes of @aws-sdk/lib-dynamodb (native values in and out, marshalled with `removeUndefinedValues`
 * as before), over the AWS JSON 1.0 protocol (shared/aws/http.ts). Errors are the service's:
 * `name` (ConditionalCheckFailedException, TransactionCanceledException with its CancellationReasons,
 * ...), `message`, `$metadata.httpStatusCode`; network failures and timeouts are Node's (`code`) or
 * `TimeoutError`, after the configured attempts.
 */
export type NativeItem = Record<string, NativeAttributeValue>;
type Names = Record<string, string>;
type Values = Record<string, NativeAttributeValue>;

interface Expressions {
  ExpressionAttributeNames?: Names;
  ExpressionAttributeValues?: Values;
}
interface Conditional extends Expressions {
  ConditionExpression?: string;
  ReturnValuesOnConditionCheckFailure?: 'ALL_OLD' | 'NONE';
}
interface Metadata {
  $metadata: { httpStatusCode?: number; requestId?: string };
}
type ReturnValue = 'NONE' | 'ALL_OLD' | 'UPDATED_OLD' | 'ALL_NEW' | 'UPDATED_NEW';

export interface GetCommandInput {
  TableName: string;
  Key: NativeItem;
  ConsistentRead?: boolean;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Names;
}
export interface GetCommandOutput extends Metadata {
  Item?: NativeItem;
}
export interface PutCommandInput extends Conditional {
  TableName: string;
  Item: NativeItem;
  ReturnValues?: ReturnValue;
}
export interface WriteCommandOutput extends Metadata {
  Attributes?: NativeItem;
}
export interface UpdateCommandInput extends Conditional {
  TableName: string;
  Key: NativeItem;
  UpdateExpression?: string;
  ReturnValues?: ReturnValue;
}
export interface DeleteCommandInput extends Conditional {
  TableName: string;
  Key: NativeItem;
  ReturnValues?: ReturnValue;
}
interface ReadMany extends Expressions {
  TableName: string;
  IndexName?: string;
  FilterExpression?: string;
  ProjectionExpression?: string;
  ExclusiveStartKey?: NativeItem;
  Limit?: number;
  ConsistentRead?: boolean;
  Select?: 'ALL_ATTRIBUTES' | 'ALL_PROJECTED_ATTRIBUTES' | 'SPECIFIC_ATTRIBUTES' | 'COUNT';
}
export interface QueryCommandInput extends ReadMany {
  KeyConditionExpression?: string;
  ScanIndexForward?: boolean;
}
export interface ScanCommandInput extends ReadMany {
  Segment?: number;
  TotalSegments?: number;
}
export interface ReadManyOutput extends Metadata {
  Items?: NativeItem[];
  Count?: number;
  ScannedCount?: number;
  LastEvaluatedKey?: NativeItem;
}
export interface KeysAndAttributes {
  Keys: NativeItem[];
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Names;
  ConsistentRead?: boolean;
}
export interface BatchGetCommandInput {
  RequestItems: Record<string, KeysAndAttributes>;
}
export interface BatchGetCommandOutput extends Metadata {
  Responses?: Record<string, NativeItem[]>;
  UnprocessedKeys?: Record<string, KeysAndAttributes>;
}
export interface WriteRequest {
  PutRequest?: { Item: NativeItem };
  DeleteRequest?: { Key: NativeItem };
}
export interface BatchWriteCommandInput {
  RequestItems: Record<string, WriteRequest[]>;
}
export interface BatchWriteCommandOutput extends Metadata {
  UnprocessedItems?: Record<string, WriteRequest[]>;
}
export interface TransactWriteCommandInput {
  TransactItems: {
    ConditionCheck?: Omit<UpdateCommandInput, 'UpdateExpression' | 'ReturnValues'> & { ConditionExpression: string };
    Put?: Omit<PutCommandInput, 'ReturnValues'>;
    Delete?: Omit<DeleteCommandInput, 'ReturnValues'>;
    Update?: Omit<UpdateCommandInput, 'ReturnValues'> & { UpdateExpression: string };
  }[];
  ClientRequestToken?: string;
}
export type TransactWriteCommandOutput = Metadata;

/** A command: its operation's name, its input, and (in the type only) its output. */
export abstract class DocumentCommand<I, O> {
  declare readonly _output: O;
  abstract readonly operation: string;
  constructor(readonly input: I) {}
}

export class GetCommand extends DocumentCommand<GetCommandInput, GetCommandOutput> {
  readonly operation = 'GetItem';
}
export class PutCommand extends DocumentCommand<PutCommandInput, WriteCommandOutput> {
  readonly operation = 'PutItem';
}
export class UpdateCommand extends DocumentCommand<UpdateCommandInput, WriteCommandOutput> {
  readonly operation = 'UpdateItem';
}
export class DeleteCommand extends DocumentCommand<DeleteCommandInput, WriteCommandOutput> {
  readonly operation = 'DeleteItem';
}
export class QueryCommand extends DocumentCommand<QueryCommandInput, ReadManyOutput> {
  readonly operation = 'Query';
}
export class ScanCommand extends DocumentCommand<ScanCommandInput, ReadManyOutput> {
  readonly operation = 'Scan';
}
export class BatchGetCommand extends DocumentCommand<BatchGetCommandInput, BatchGetCommandOutput> {
  readonly operation = 'BatchGetItem';
}
export class BatchWriteCommand extends DocumentCommand<BatchWriteCommandInput, BatchWriteCommandOutput> {
  readonly operation = 'BatchWriteItem';
}
export class TransactWriteCommand extends DocumentCommand<TransactWriteCommandInput, TransactWriteCommandOutput> {
  readonly operation = 'TransactWriteItems';
}

/** Fields holding one item (or key) of native values, in requests and answers. */
const ITEMS = new Set([
  'Key',
  'Item',
  'ExclusiveStartKey',
  'ExpressionAttributeValues',
  'Attributes',
  'LastEvaluatedKey',
]);
/** Fields holding a list of them. */
const ITEM_LISTS = new Set(['Keys', 'Items']);

type AttributeValue = Record<string, unknown>;

const binary = (b: unknown): string => {
  if (typeof b === 'string') return b;
  if (ArrayBuffer.isView(b)) return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
  return Buffer.from(b as ArrayBuffer).toString('base64');
};

/** JSON for binary attribute values: base64, as the protocol wants (JSON.stringify would write a Buffer's bytes as a list). */
function encodeValue(v: AttributeValue): AttributeValue {
  if ('B' in v) return { B: binary(v.B) };
  if ('BS' in v) return { BS: (v.BS as unknown[]).map(binary) };
  if ('L' in v) return { L: (v.L as AttributeValue[]).map(encodeValue) };
  if ('M' in v) return { M: encodeMap(v.M as Record<string, AttributeValue>) };
  return v;
}
const encodeMap = (m: Record<string, AttributeValue>) =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, encodeValue(v)]));

const bytes = (s: unknown): Uint8Array => {
  const b = Buffer.from(s as string, 'base64');
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
};

function decodeValue(v: AttributeValue): AttributeValue {
  if ('B' in v) return { B: bytes(v.B) };
  if ('BS' in v) return { BS: (v.BS as unknown[]).map(bytes) };
  if ('L' in v) return { L: (v.L as AttributeValue[]).map(decodeValue) };
  if ('M' in v) return { M: decodeMap(v.M as Record<string, AttributeValue>) };
  return v;
}
const decodeMap = (m: Record<string, AttributeValue>) =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, decodeValue(v)]));

const MARSHALL = { removeUndefinedValues: true } as const;
const toWire = (item: unknown) =>
  encodeMap(marshall(item as NativeItem, MARSHALL) as unknown as Record<string, AttributeValue>);
const fromWire = (item: unknown) =>
  unmarshall(decodeMap(item as Record<string, AttributeValue>) as never) as NativeItem;

/** Walks a request (or an answer) turning each item field's native values into attribute values (or back). */
function convert(value: unknown, item: (v: unknown) => unknown, responses: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => convert(v, item, responses));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    if (ITEMS.has(k)) out[k] = item(v);
    else if (ITEM_LISTS.has(k)) out[k] = (v as unknown[]).map(item);
    // BatchGetItem's answer: table name -> items.
    else if (responses && k === 'Responses')
      out[k] = Object.fromEntries(
        Object.entries(v as Record<string, unknown[]>).map(([t, items]) => [t, items.map(item)]),
      );
    else out[k] = convert(v, item, responses);
  }
  return out;
}

export class DynamoDBDocumentClient {
  readonly http: JsonServiceClient;
  constructor(readonly config: Omit<JsonServiceOptions, 'service' | 'targetPrefix'>) {
    this.http = new JsonServiceClient({ ...config, service: 'dynamodb', targetPrefix: 'DynamoDB_20120810' });
  }

  async send<I, O>(command: DocumentCommand<I, O>, options?: CallOptions): Promise<O> {
    let input = command.input as Record<string, unknown>;
    // The SDK's idempotency token, one per call (the same on each attempt): a retried transaction that
    // had in fact committed succeeds again instead of failing its own conditions.
    if (command instanceof TransactWriteCommand) input = { ClientRequestToken: randomUUID(), ...input };
    const answer = await this.http.call(command.operation, convert(input, toWire, false), options);
    const out = convert(answer, fromWire, true) as Record<string, unknown>;
    out.$metadata = { httpStatusCode: 200 };
    return out as O;
  }

  /** Connections are pooled per process and closed with it. */
  destroy(): void {}
}
