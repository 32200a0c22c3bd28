import { environmentCredentials, signedHeaders } from '../aws/sigv4.ts';
import { config } from '../config.ts';
import {
  DestinationError,
  destinationRequest,
  errorCode,
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

/**
 * STS AssumeRole, hand-signed (the SDK's STS client would add its own serialization stack to the
 * exporter's bundle for one form POST). The exporter's role may do nothing else with its identity:
 * the customer's trust policy decides, and `externalId` (the organization id) stops one tenant from
 * naming another tenant's role (AWS's confused-deputy pattern for third-party access).
 */
export async function assumeRole(
  input: { roleArn: string; externalId: string; sessionName: string },
  net: NetworkOptions = networkOptions(),
): Promise<TemporaryCredentials> {
  const url = new URL(config().stsEndpoint);
  const region = /^sts\.([a-z0-9-]+)\.amazonaws\.com/.exec(url.hostname)?.[1] ?? 'us-east-1';
  const body = Buffer.from(
    new URLSearchParams({
      Action: 'AssumeRole',
      Version: '2011-06-15',
      RoleArn: input.roleArn,
      RoleSessionName: input.sessionName,
      ExternalId: input.externalId,
      DurationSeconds: String(SESSION_SECONDS),
    }).toString(),
  );
  const path = url.pathname || '/';
  const headers = signedHeaders({
    method: 'POST',
    url,
    path,
    query: {},
    headers: {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      'content-length': String(body.length),
    },
    body,
    service: 'sts',
    region,
    credentials: environmentCredentials(),
  });
  // STS is the operator's endpoint, never a tenant's: the local runtime's stand-in is reachable like its S3.
  const stsNet =
    config().runtime === 'local' ? { ...net, loopbackOrigins: new Set([...net.loopbackOrigins, url.origin]) } : net;
  const res = await destinationRequest('STS AssumeRole', url, { method: 'POST', path, headers, body }, stsNet);
  if (res.status !== 200) {
    const code = errorCode(res.body);
    throw new DestinationError(`STS AssumeRole failed: ${res.status}${code ? ` ${code}` : ''}`);
  }
  const field = (name: string) => new RegExp(`<${name}>([^<]{1,8192})</${name}>`).exec(res.body)?.[1];
  const [id, secret, token] = [field('AccessKeyId'), field('SecretAccessKey'), field('SessionToken')];
  if (!id || !secret || !token) throw new DestinationError('STS AssumeRole failed: the answer has no credentials');
  return { aws_access_key_id: id, aws_secret_access_key: secret, aws_session_token: token };
}
