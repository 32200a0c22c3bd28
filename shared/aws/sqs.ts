import { SQSClient } from '@aws-sdk/client-sqs';
import { AWS_CLIENTS } from '../config.ts';
import { clientOptions, traced } from './options.ts';

/** SQS: one @aws-sdk/client-sqs client per process (shared/config.ts, AWS_CLIENTS.sqs), and the commands the queues send through it. */
export {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';

let client: SQSClient | undefined;

export const sqs = (): SQSClient => (client ??= traced(new SQSClient(clientOptions(AWS_CLIENTS.sqs))));
