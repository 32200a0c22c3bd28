import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Aws, Duration, Stack } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as route53Targets from 'aws-cdk-lib/aws-route53-targets';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { makeUniqueId } from '#infra/constructs/logical-ids.ts';
import { resourcePrefix, type StageSettings } from '#infra/stages.ts';

export const EDGE_FUNCTION_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'edge',
  'strip-trailing-slash.js',
);

/**
 * CloudFront names its function and its origins after their construct paths, not their logical ids:
 * these keep the names of the stack-level `StripTrailingSlash` and `Distribution/Origin1`, so moving
 * them into PublicApi neither replaces the function nor edits the distribution of a deployed stage.
 */
const stackLevelName = (scope: Construct, ...ids: string[]) => makeUniqueId([Stack.of(scope).node.id, ...ids]);

export interface PublicApiProps {
  stage: StageSettings;
  /** Answers what no route matches (404/405/trailing-slash redirect) in the API's error shape. */
  fallback: lambda.IFunction;
  /** Where CloudFront writes its standard logs, when the stage keeps them. */
  edgeLogBucket?: s3.IBucket;
}

/**
 * The way in: the HTTP API (routes are added by each RouteFunction) with its throttled, logged
 * `$default` stage, and the CloudFront distribution in front of it. Stateless: it keeps no data. Its
 * children keep the logical ids they had as children of the stack (`logicalIdPrefix` is empty,
 * infra/constructs/logical-ids.ts), so the API, its URL and the distribution are updated in place.
 */
export class PublicApi extends Construct {
  readonly logicalIdPrefix = '';
  readonly api: apigwv2.HttpApi;
  /** The HTTP API's `$default` stage: throttling, access logs, the metrics the API alarms read. */
  readonly apiStage: apigwv2.HttpStage;
  readonly apiAccessLogs: logs.LogGroup;
  readonly edgeFunction: cloudfront.Function;
  readonly distribution: cloudfront.Distribution;

  constructor(scope: Construct, id: string, props: PublicApiProps) {
    super(scope, id);
    ({ api: this.api, apiStage: this.apiStage, apiAccessLogs: this.apiAccessLogs } = httpApi(this, props));
    ({ edgeFunction: this.edgeFunction, distribution: this.distribution } = cloudFront(this, this.api, props));
  }
}

/** The HTTP API (the fallback answers what no route matches) and its `$default` stage. */
function httpApi(scope: Construct, { stage, fallback }: PublicApiProps) {
  const prefix = resourcePrefix(stage);
  const api = new apigwv2.HttpApi(scope, 'HttpApi', {
    apiName: prefix,
    description: `PostHog-compatible analytics API (${stage.name}); public entry is the CloudFront distribution`,
    // API Gateway's own 404 is `{"message":"Not Found"}`; the fallback answers in the API's error shape.
    defaultIntegration: new HttpLambdaIntegration('FallbackIntegration', fallback),
    // Our own $default stage below (throttling, access logs); HttpApi's cannot take either.
    createDefaultStage: false,
    // Off unless the stage lists browser origins. API keys travel in Authorization, never in cookies.
    corsPreflight: stage.corsOrigins?.length
      ? {
          allowOrigins: stage.corsOrigins,
          allowMethods: [apigwv2.CorsHttpMethod.ANY],
          allowHeaders: ['authorization', 'content-type'],
          allowCredentials: false,
          maxAge: Duration.hours(1),
        }
      : undefined,
  });
  const apiAccessLogs = new logs.LogGroup(scope, 'ApiAccessLogs', {
    logGroupName: `/aws/apigateway/${prefix}/access`,
    retention: stage.logRetention,
    removalPolicy: stage.removalPolicy,
  });
  // Under the API with the id HttpApi would give it: same logical id as the stage it used to create,
  // so an existing stack updates that stage in place instead of colliding on the name `$default`.
  const apiStage = new apigwv2.HttpStage(api, 'DefaultStage', {
    httpApi: api,
    stageName: '$default',
    autoDeploy: true,
    // The outer guard: API Gateway answers 429 above these, before any function runs. Per-key limits
    // in the code are the inner one.
    throttle: { rateLimit: stage.throttle.rateLimit, burstLimit: stage.throttle.burstLimit },
    // JSON lines with the same field names as the function logs where they overlap. No headers:
    // Authorization (API keys) never reaches the access log.
    accessLogSettings: {
      destination: new apigwv2.LogGroupLogDestination(apiAccessLogs),
      format: AccessLogFormat.custom(
        JSON.stringify({
          request_id: '$context.requestId',
          time: '$context.requestTime',
          ip: '$context.identity.sourceIp',
          user_agent: '$context.identity.userAgent',
          method: '$context.httpMethod',
          path: '$context.path',
          route: '$context.routeKey',
          status: '$context.status',
          latency_ms: '$context.responseLatency',
          integration_latency_ms: '$context.integrationLatency',
          integration_status: '$context.integrationStatus',
          integration_error: '$context.integrationErrorMessage',
          error: '$context.error.message',
          response_length: '$context.responseLength',
        }),
      ),
    },
  });

  return { api, apiStage, apiAccessLogs };
}

/** CloudFront in front of the API: trailing slashes stripped at the edge, SDK scripts cached, DNS when the stage has a zone. */
function cloudFront(scope: Construct, api: apigwv2.HttpApi, { stage, edgeLogBucket }: PublicApiProps) {
  const prefix = resourcePrefix(stage);
  const edgeFunction = new cloudfront.Function(scope, 'StripTrailingSlash', {
    functionName: `${Aws.REGION}${stackLevelName(scope, 'StripTrailingSlash')}`,
    code: cloudfront.FunctionCode.fromFile({ filePath: EDGE_FUNCTION_FILE }),
    runtime: cloudfront.FunctionRuntime.JS_2_0,
    comment: 'Strip one trailing slash; pass the viewer host as x-forwarded-host',
  });

  const domain = stage.customDomain;
  const apiOrigin = new origins.HttpOrigin(`${api.apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`, {
    originId: stackLevelName(scope, 'Distribution', 'Origin1'),
    protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
    originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
  });
  const distribution = new cloudfront.Distribution(scope, 'Distribution', {
    comment: `${prefix} API`,
    defaultBehavior: {
      origin: apiOrigin,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
      // Every response is per-key and per-tenant. With caching disabled the AllViewer policies also
      // forward Authorization; Host is left out because API Gateway rejects a foreign Host.
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      functionAssociations: [{ function: edgeFunction, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
    },
    additionalBehaviors: {
      // posthog-js's scripts (the sdk_static routes): the same bytes for everyone (CORS `*`, no
      // credentials), so CloudFront caches them as the function's Cache-Control says and compresses
      // them; the query (`?v=<version>`) and viewer headers stay out of the cache key.
      '/static/*': {
        origin: apiOrigin,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD_OPTIONS,
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        compress: true,
      },
      // The console's bundle: content-versioned paths, immutable, the same for everyone (no credentials).
      '/console/*': {
        origin: apiOrigin,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD_OPTIONS,
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        compress: true,
      },
    },
    ...(domain
      ? {
          domainNames: [domain.domainName],
          certificate: acm.Certificate.fromCertificateArn(scope, 'Certificate', domain.certificateArn),
          // Only settable with a custom certificate: *.cloudfront.net keeps CloudFront's own policy.
          minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
        }
      : {}),
    httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
    ...(edgeLogBucket ? { enableLogging: true, logBucket: edgeLogBucket, logFilePrefix: 'cloudfront/' } : {}),
  });
  if (domain?.hostedZone) {
    const zone = route53.HostedZone.fromHostedZoneAttributes(scope, 'HostedZone', domain.hostedZone);
    const target = route53.RecordTarget.fromAlias(new route53Targets.CloudFrontTarget(distribution));
    new route53.ARecord(scope, 'AliasA', { zone, recordName: domain.domainName, target });
    new route53.AaaaRecord(scope, 'AliasAaaa', { zone, recordName: domain.domainName, target });
  }
  return { edgeFunction, distribution };
}
