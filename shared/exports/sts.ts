import type { STSClient } from '@aws-sdk/client-sts';
import { config } from '../config.ts';
import {
  DestinationError,
  DestinationHttpHandler,
  destinationFailure,
  networkOptions,
  type NetworkOptions,
} from './destination-http.ts';

export interface TemporaryCredentials {
  aws_access_key_id: string;
  aws_secret_access_key: string;
  aws_session_token: string;
}

/** The shortest session STS grants: the credentials serve one run and are never stored. */
const SESSION_SECONDS = 900;

const clients = new Map<string, STSClient>();

/**
 * One STS client per process (and per set of reachable loopback origins), signing with the exporter's
 * own identity (the SDK's default chain: the function's role). The endpoint is the operator's
 * (AWS_ENDPOINT_URL_STS, else the regional one), and in the local runtime its stand-in is reachable
 * like the local S3; requests still go through the destination handler, as a role ARN is a tenant's.
 */
function stsClient(Client: typeof STSClient, net: NetworkOptions): STSClient {
  const url = new URL(config().stsEndpoint);
  const reachable =
    config().runtime === 'local' ? { ...net, loopbackOrigins: new Set([...net.loopbackOrigins, url.origin]) } : net;
  const key = JSON.stringify([[...reachable.loopbackOrigins].sort(), net.connectTimeoutMs, net.requestTimeoutMs]);
  let client = clients.get(key);
  if (!client) {
    client = new Client({
      endpoint: url.href,
      region: /^sts\.([a-z0-9-]+)\.amazonaws\.com/.exec(url.hostname)?.[1] ?? 'us-east-1',
      retryMode: 'standard',
      maxAttempts: 3,
      requestHandler: new DestinationHttpHandler(
        reachable,
        (code) => `<ErrorResponse><Error><Code>${code}</Code></Error></ErrorResponse>`,
      ),
    });
    clients.set(key, client);
  }
  return client;
}

/**
 * STS AssumeRole. The exporter's role may do nothing else with its identity: the customer's trust
 * policy decides, and `externalId` (the organization id) stops one tenant from naming another
 * tenant's role (AWS's confused-deputy pattern for third-party access).
 */
export async function assumeRole(
  input: { roleArn: string; externalId: string; sessionName: string },
  net: NetworkOptions = networkOptions(),
): Promise<TemporaryCredentials> {
  // The STS client is loaded on first use: only the exporter and a destination's test assume a role.
  const { STSClient: Client, AssumeRoleCommand } = await import('@aws-sdk/client-sts');
  let credentials: { AccessKeyId?: string; SecretAccessKey?: string; SessionToken?: string } | undefined;
  try {
    ({ Credentials: credentials } = await stsClient(Client, net).send(
      new AssumeRoleCommand({
        RoleArn: input.roleArn,
        RoleSessionName: input.sessionName,
        ExternalId: input.externalId,
        DurationSeconds: SESSION_SECONDS,
      }),
    ));
  } catch (error) {
    throw destinationFailure(
      'STS AssumeRole',
      error,
      (status, code) => new DestinationError(`STS AssumeRole failed: ${status}${code ? ` ${code}` : ''}`),
    );
  }
  const { AccessKeyId: id, SecretAccessKey: secret, SessionToken: token } = credentials ?? {};
  if (!id || !secret || !token) throw new DestinationError('STS AssumeRole failed: the answer has no credentials');
  return { aws_access_key_id: id, aws_secret_access_key: secret, aws_session_token: token };
}
