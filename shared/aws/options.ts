import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { AwsClientSettings } from '../config.ts';
import { tracer } from '../observability.ts';

/**
 * What every AWS client is built with, from its settings in shared/config.ts: bounded connection and
 * request timeouts (an attempt past its request timeout is aborted, a TimeoutError the SDK retries),
 * its attempts and the SDK's retry mode. Endpoint, region and credentials are the SDK's own reading
 * of the environment: AWS_ENDPOINT_URL_<SERVICE> (the local stand-ins), AWS_REGION, the role's keys.
 */
export function clientOptions(settings: AwsClientSettings) {
  return {
    maxAttempts: settings.maxAttempts,
    retryMode: settings.retryMode,
    requestHandler: new NodeHttpHandler({
      connectionTimeout: settings.connectionTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      // Without it the handler only logs a warning past the request timeout and waits on.
      throwOnRequestTimeout: true,
    }),
  };
}

/** The client with each call traced as an X-Ray subsegment (service, operation, status); unchanged where tracing is off. */
export const traced = <C>(client: C): C => tracer.captureAWSv3Client(client);
