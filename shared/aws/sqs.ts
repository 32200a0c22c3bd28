import { JsonServiceClient, type CallOptions, type JsonServiceOptions } from './http.ts';

/**
 * SQS's four calls we make, with @aws-sdk/client-sqs's command names and shapes, over the AWS JSON
 * 1.0 protocol the SDK speaks to SQS (shared/aws/http.ts). The SDK's MD5 check of bodies is left
 * out: TLS already guards them in transit.
 */
interface Metadata {
  $metadata: { httpStatusCode?: number; requestId?: string };
}
export interface MessageAttributeValue {
  DataType: string;
  StringValue?: string;
  BinaryValue?: string;
}
export interface SendMessageCommandInput {
  QueueUrl: string;
  MessageBody: string;
  DelaySeconds?: number;
  MessageAttributes?: Record<string, MessageAttributeValue>;
  MessageGroupId?: string;
  MessageDeduplicationId?: string;
}
export interface SendMessageCommandOutput extends Metadata {
  MessageId?: string;
  MD5OfMessageBody?: string;
  SequenceNumber?: string;
}
export interface ReceiveMessageCommandInput {
  QueueUrl: string;
  MaxNumberOfMessages?: number;
  WaitTimeSeconds?: number;
  VisibilityTimeout?: number;
  MessageSystemAttributeNames?: string[];
  MessageAttributeNames?: string[];
}
export interface Message {
  MessageId?: string;
  ReceiptHandle?: string;
  MD5OfBody?: string;
  Body?: string;
  Attributes?: Record<string, string>;
  MessageAttributes?: Record<string, MessageAttributeValue>;
}
export interface ReceiveMessageCommandOutput extends Metadata {
  Messages?: Message[];
}
export interface DeleteMessageCommandInput {
  QueueUrl: string;
  ReceiptHandle: string;
}
export interface ChangeMessageVisibilityCommandInput extends DeleteMessageCommandInput {
  VisibilityTimeout: number;
}

export abstract class QueueCommand<I, O> {
  declare readonly _output: O;
  abstract readonly operation: string;
  constructor(readonly input: I) {}
}
export class SendMessageCommand extends QueueCommand<SendMessageCommandInput, SendMessageCommandOutput> {
  readonly operation = 'SendMessage';
}
export class ReceiveMessageCommand extends QueueCommand<ReceiveMessageCommandInput, ReceiveMessageCommandOutput> {
  readonly operation = 'ReceiveMessage';
}
export class DeleteMessageCommand extends QueueCommand<DeleteMessageCommandInput, Metadata> {
  readonly operation = 'DeleteMessage';
}
export class ChangeMessageVisibilityCommand extends QueueCommand<ChangeMessageVisibilityCommandInput, Metadata> {
  readonly operation = 'ChangeMessageVisibility';
}

export class SQSClient {
  readonly http: JsonServiceClient;
  constructor(readonly config: Omit<JsonServiceOptions, 'service' | 'targetPrefix'>) {
    // The header the SDK sends so that SQS answers errors with their JSON codes and the query API's too.
    this.http = new JsonServiceClient({
      ...config,
      service: 'sqs',
      targetPrefix: 'AmazonSQS',
      headers: { 'x-amzn-query-mode': 'true' },
    });
  }

  async send<I, O>(command: QueueCommand<I, O>, options?: CallOptions): Promise<O> {
    const out = await this.http.call(command.operation, command.input, options);
    return { ...out, $metadata: { httpStatusCode: 200 } } as O;
  }

  /** Connections are pooled per process and closed with it. */
  destroy(): void {}
}
