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

export const EDGE_FUNCTION_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'edge', 'strip-trailing-slash.js');

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
    const { stage } = props;
    const prefix = resourcePrefix(stage);
    this.api = new apigwv2.HttpApi(this, 'HttpApi', {
      apiName: prefix,
      description: `PostHog-compatible analytics API (${stage.name}); public entry is the CloudFront distribution`,
      // API Gateway's own 404 is `{"message":"Not Found"}`; the fallback answers in the API's error shape.
      defaultIntegration: new HttpLambdaIntegration('FallbackIntegration', props.fallback),
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
    this.apiAccessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      logGroupName: `/aws/apigateway/${prefix}/access`,
      retention: stage.logRetention,
      removalPolicy: stage.removalPolicy,
    });
    // Under the API with the id HttpApi would give it: same logical id as the stage it used to create,
    // so an existing stack updates that stage in place instead of colliding on the name `$default`.
    this.apiStage = new apigwv2.HttpStage(this.api, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      // The outer guard: API Gateway answers 429 above these, before any function runs. Per-key limits
      // in the code are the inner one.
      throttle: { rateLimit: stage.throttle.rateLimit, burstLimit: stage.throttle.burstLimit },
      // JSON lines with the same field names as the function logs where they overlap. No headers:
      // Authorization (API keys) never reaches the access log.
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.apiAccessLogs),
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

    this.edgeFunction = new cloudfront.Function(this, 'StripTrailingSlash', {
      functionName: `${Aws.REGION}${stackLevelName(this, 'StripTrailingSlash')}`,
      code: cloudfront.FunctionCode.fromFile({ filePath: EDGE_FUNCTION_FILE }),
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      comment: 'Strip one trailing slash; pass the viewer host as x-forwarded-host',
    });

    const domain = stage.customDomain;
    const apiOrigin = new origins.HttpOrigin(`${this.api.apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`, {
      originId: stackLevelName(this, 'Distribution', 'Origin1'),
      protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
      originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
    });
    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: `${prefix} API`,
      defaultBehavior: {
        origin: apiOrigin,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        // Every response is per-key and per-tenant. With caching disabled the AllViewer policies also
        // forward Authorization; Host is left out because API Gateway rejects a foreign Host.
        cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
        originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        functionAssociations: [{ function: this.edgeFunction, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
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
      },
      ...(domain
        ? {
            domainNames: [domain.domainName],
            certificate: acm.Certificate.fromCertificateArn(this, 'Certificate', domain.certificateArn),
            // Only settable with a custom certificate: *.cloudfront.net keeps CloudFront's own policy.
            minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
          }
        : {}),
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      ...(props.edgeLogBucket ? { enableLogging: true, logBucket: props.edgeLogBucket, logFilePrefix: 'cloudfront/' } : {}),
    });
    if (domain?.hostedZone) {
      const zone = route53.HostedZone.fromHostedZoneAttributes(this, 'HostedZone', domain.hostedZone);
      const target = route53.RecordTarget.fromAlias(new route53Targets.CloudFrontTarget(this.distribution));
      new route53.ARecord(this, 'AliasA', { zone, recordName: domain.domainName, target });
      new route53.AaaaRecord(this, 'AliasAaaa', { zone, recordName: domain.domainName, target });
    }
  }
}
