import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Aws, CfnOutput, Duration, Stack, type CfnElement, type StackProps } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as events from 'aws-cdk-lib/aws-events';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as route53Targets from 'aws-cdk-lib/aws-route53-targets';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { QUEUES, type QueueName } from '#shared/queues/settings.ts';
import { routes, workers, type Route, type Worker } from '#functions/routes.ts';
import { bundleDir, FALLBACK_FUNCTION } from '#infra/build.ts';
import { logicalIdPath, makeUniqueId } from '#infra/constructs/logical-ids.ts';
import { Monitoring, type DeadLetterQueue } from '#infra/constructs/monitoring.ts';
import { acknowledgeNagFindings } from '#infra/constructs/nag.ts';
import { RouteFunction, ServiceFunction, serviceNameOf, WorkerFunction } from '#infra/constructs/service-function.ts';
import { StatefulResources } from '#infra/constructs/stateful.ts';
import { resourcePrefix, type StageSettings } from '#infra/stages.ts';

export const EDGE_FUNCTION_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'edge', 'strip-trailing-slash.js');

export interface AnalyticsStackProps extends StackProps {
  stage: StageSettings;
  /**
   * Where each function's code comes from. Defaults to the bundle `npm run build` wrote; tests pass
   * inline code so they need neither dist/ nor esbuild.
   */
  code?: (functionName: string) => lambda.Code;
}

/**
 * One stage of the service. What holds data is in StatefulResources; everything else is stateless and
 * can be replaced: one ServiceFunction per route-table row (RouteFunction, WorkerFunction) granted only
 * what its row declares, the HTTP API and CloudFront in front of it, and Monitoring's alarms.
 */
export class AnalyticsStack extends Stack {
  readonly stage: StageSettings;
  readonly stateful: StatefulResources;
  readonly table: dynamodb.Table;
  /** The queues of shared/queues/settings.ts with their DLQs. */
  readonly queues: ReadonlyMap<QueueName, { queue: sqs.Queue; dlq: sqs.Queue }>;
  /** On-failure destination of the ingest worker's stream mapping. */
  readonly ingestFailures: sqs.Queue;
  /** Wraps the data keys that seal batch-export destination secrets (shared/exports/secrets.ts). */
  readonly exportSecretsKey: kms.Key;
  /** CloudFront standard logs, when the stage keeps them. */
  readonly edgeLogBucket?: s3.Bucket;
  readonly api: apigwv2.HttpApi;
  /** The HTTP API's `$default` stage: throttling, access logs, the metrics the API alarms read. */
  readonly apiStage: apigwv2.HttpStage;
  readonly apiAccessLogs: logs.LogGroup;
  readonly distribution: cloudfront.Distribution;
  /** Function name (operationId, worker name, or FALLBACK_FUNCTION) -> Lambda. */
  readonly functions = new Map<string, lambda.Function>();
  readonly schedules = new Map<string, events.Rule>();
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: AnalyticsStackProps) {
    super(scope, id, props);
    const { stage } = props;
    this.stage = stage;
    const prefix = resourcePrefix(stage);

    this.stateful = new StatefulResources(this, stage);
    ({ table: this.table, queues: this.queues, ingestFailures: this.ingestFailures, exportSecretsKey: this.exportSecretsKey, edgeLogBucket: this.edgeLogBucket } = this.stateful);
    const functionProps = { stage, stateful: this.stateful, code: props.code ?? ((name: string) => lambda.Code.fromAsset(bundleDir(name))) };

    // The fallback only answers 404/405/308 from the route table: it never touches the table.
    const fallback = new ServiceFunction(this, FALLBACK_FUNCTION, 'Unmatched requests: 404, 405, trailing-slash redirect', { table: 'none' }, functionProps).fn;
    this.functions.set(FALLBACK_FUNCTION, fallback);

    this.api = new apigwv2.HttpApi(this, 'HttpApi', {
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

    for (const route of routes as readonly Route[]) {
      this.functions.set(route.operationId, new RouteFunction(this, route, { ...functionProps, api: this.api }).fn);
    }
    for (const worker of workers as readonly Worker[]) {
      const { fn, schedule } = new WorkerFunction(this, worker, functionProps);
      this.functions.set(worker.name, fn);
      if (schedule) this.schedules.set(worker.name, schedule);
    }

    const edgeFunction = new cloudfront.Function(this, 'StripTrailingSlash', {
      code: cloudfront.FunctionCode.fromFile({ filePath: EDGE_FUNCTION_FILE }),
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      comment: 'Strip one trailing slash; pass the viewer host as x-forwarded-host',
    });

    const domain = stage.customDomain;
    const apiOrigin = new origins.HttpOrigin(`${this.api.apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`, {
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
      ...(this.edgeLogBucket ? { enableLogging: true, logBucket: this.edgeLogBucket, logFilePrefix: 'cloudfront/' } : {}),
    });
    if (domain?.hostedZone) {
      const zone = route53.HostedZone.fromHostedZoneAttributes(this, 'HostedZone', domain.hostedZone);
      const target = route53.RecordTarget.fromAlias(new route53Targets.CloudFrontTarget(this.distribution));
      new route53.ARecord(this, 'AliasA', { zone, recordName: domain.domainName, target });
      new route53.AaaaRecord(this, 'AliasAaaa', { zone, recordName: domain.domainName, target });
    }

    const deadLetterQueues: DeadLetterQueue[] = [
      {
        name: 'ingest-failures',
        queue: this.ingestFailures,
        meaning: 'The ingest worker gave up on stream records: persons and rollups are missing those events until they are replayed.',
        period: Duration.minutes(1),
      },
      ...[...this.queues].map(([name, { dlq }]) => ({
        name: name.replaceAll('_', '-'),
        queue: dlq,
        meaning: `Messages of ${name} failed ${QUEUES[name].maxReceiveCount} times and sit in its DLQ.`,
      })),
    ];
    const workerNames = new Set<string>(workers.map((w) => w.name));
    this.monitoring = new Monitoring(this, 'Monitoring', {
      stage,
      prefix,
      serviceName: serviceNameOf(stage),
      apiFunctions: new Map([...this.functions].filter(([name]) => !workerNames.has(name))),
      workerFunctions: new Map([...this.functions].filter(([name]) => workerNames.has(name))),
      ingestWorker: this.functions.get('ingest_events')!,
      apiStage: this.apiStage,
      deletionQueue: this.queues.get('person_deletions')!.queue,
      deadLetterQueues,
    });

    acknowledgeNagFindings(this);

    new CfnOutput(this, 'ApiBaseUrl', {
      description: 'Public API base URL (CloudFront; serves both /path and /path/)',
      value: domain ? `https://${domain.domainName}` : `https://${this.distribution.distributionDomainName}`,
    });
    if (domain) {
      new CfnOutput(this, 'DistributionDomainName', {
        description: `Point ${domain.domainName} here (CNAME or alias) unless the stack manages the hosted zone`,
        value: this.distribution.distributionDomainName,
      });
    }
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'AlarmTopicArn', { description: 'Every alarm of the stage notifies this topic: subscribe here', value: this.monitoring.topic.topicArn });
    new CfnOutput(this, 'DashboardUrl', {
      value: `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${prefix}`,
    });
    new CfnOutput(this, 'PersonDeletionQueueUrl', { value: this.queues.get('person_deletions')!.queue.queueUrl });
    new CfnOutput(this, 'IngestFailuresQueueUrl', { value: this.ingestFailures.queueUrl });
  }

  /**
   * CDK's logical ids, except that a ServiceFunction's id prefixes its children's instead of adding a
   * path component (infra/constructs/logical-ids.ts): deployed functions, roles and log groups keep
   * their ids and are updated in place.
   */
  protected override allocateLogicalId(element: CfnElement): string {
    return makeUniqueId(logicalIdPath(this, element));
  }
}
