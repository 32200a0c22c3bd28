import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DYNAMODB_TIMEOUTS, type InvocationKind } from '../config.ts';
import { clientOptions, traced } from './options.ts';

/**
 * DynamoDB: @aws-sdk/lib-dynamodb's document client over @aws-sdk/client-dynamodb, one per invocation
 * kind and process (the kinds' limits differ: shared/config.ts, DYNAMODB_TIMEOUTS), and the commands
 * the stores in shared/db send through it. Items are marshalled with `removeUndefinedValues` (an
 * absent optional field is left out, not refused); numbers beyond 2^53, class instances and empty
 * sets are refused by the marshaller, as before. Errors are the service's (`name`, `message`,
 * `$metadata`, CancellationReasons), read only by shared/db/client.ts.
 */
export {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type BatchWriteCommandInput,
  type QueryCommandInput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';

const clients = new Map<InvocationKind, DynamoDBDocumentClient>();

export function documentClient(kind: InvocationKind): DynamoDBDocumentClient {
  let client = clients.get(kind);
  if (!client) {
    // Traced below the document client: both share one middleware stack, so each call is one subsegment.
    client = DynamoDBDocumentClient.from(traced(new DynamoDBClient(clientOptions(DYNAMODB_TIMEOUTS[kind]))), {
      marshallOptions: { removeUndefinedValues: true },
    });
    clients.set(kind, client);
  }
  return client;
}
