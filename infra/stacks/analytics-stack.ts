import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Aws, CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as route53Targets from 'aws-cdk-lib/aws-route53-targets';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { QUEUES, type QueueName, type QueueSettings } from '#shared/queues/settings.ts';
import { keys as itemKeys } from '#shared/db/keys.ts';
import { API_TIMEOUT_SECONDS, routePaths, routes, workers, type Route, type Worker } from '#functions/routes.ts';
import { RAW_EVENT_RECORD_FILTER } from '#shared/db/stream.ts';
import { ENV } from '#shared/config.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { bundleDir, FALLBACK_FUNCTION } from '#infra/build.ts';
import { Monitoring, pascal, type DeadLetterQueue } from '#infra/constructs/monitoring.ts';
import { acknowledgeNagFindings } from '#infra/constructs/nag.ts';
import { resourcePrefix, type StageSettings } from '#infra/stages.ts';

export const EDGE_FUNCTION_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'edge', 'strip-trailing-slash.js');

export const SERVICE_NAME = 'analytics';

/**
 * POWERTOOLS_SERVICE_NAME of a stage's functions, hence the `service` field of its logs and the `service`
 * dimension of its custom metrics: per stage, so two stages in one account never share a metric.
 */
export const serviceNameOf = (stage: Pick<StageSettings, 'name'>) => `${SERVICE_NAME}-${stage.name}`;

/** `analytics-<stage>-<name>`: the Lambda function name (≤ 64 characters, checked in test/infra). */
export const functionNameOf = (stage: Pick<StageSettings, 'name'>, name: string) => `${resourcePrefix(stage)}-${name}`;

/** `person_deletions` -> `analytics-<stage>-person-deletions`. */
const queueNameOf = (stage: StageSettings, name: string) => `${resourcePrefix(stage)}-${name.replaceAll('_', '-')}`;

export interface AnalyticsStackProps extends StackProps {
  stage: StageSettings;
  /**
   * Where each function's code comes from. Defaults to the bundle `npm run build` wrote; tests pass
   * inline code so they need neither dist/ nor esbuild.
   */
  code?: (functionName: string) => lambda.Code;
}

/** `/api/organizations/:id` (route table) -> `/api/organizations/{id}` (API Gateway). */
export const apiGatewayPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

export class AnalyticsStack extends Stack {
  readonly stage: StageSettings;
  readonly table: dynamodb.Table;
  readonly api: apigwv2.HttpApi;
  /** The HTTP API's `$default` stage: throttling, access logs, the metrics the API alarms read. */
  readonly apiStage: apigwv2.HttpStage;
  readonly apiAccessLogs: logs.LogGroup;
  readonly distribution: cloudfront.Distribution;
  /** CloudFront standard logs, when the stage keeps them. */
  readonly edgeLogBucket?: s3.Bucket;
  /** On-failure destination of the ingest worker's stream mapping. */
  readonly ingestFailures: sqs.Queue;
  /** The queues of shared/queues/settings.ts with their DLQs. */
  readonly queues = new Map<QueueName, { queue: sqs.Queue; dlq: sqs.Queue }>();
  /** Function name (operationId, worker name, or FALLBACK_FUNCTION) -> Lambda. */
  readonly functions = new Map<string, lambda.Function>();
  readonly schedules = new Map<string, events.Rule>();
  readonly monitoring: Monitoring;
  /** Wraps the data keys that seal batch-export destination secrets (shared/exports/secrets.ts). */
  readonly exportSecretsKey: kms.Key;

  constructor(scope: Construct, id: string, props: AnalyticsStackProps) {
    super(scope, id, props);
    const { stage } = props;
    this.stage = stage;
    const prefix = resourcePrefix(stage);
    const code = props.code ?? ((name: string) => lambda.Code.fromAsset(bundleDir(name)));

    const { indexes, ...keys } = TABLE_SCHEMA;
    this.table = new dynamodb.Table(this, 'Table', {
      tableName: prefix,
      partitionKey: { name: keys.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: keys.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: keys.ttlAttribute,
      // The ingest worker (persons, rollups) is fed by this stream (DESIGN §1).
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: stage.pointInTimeRecovery },
      deletionProtection: stage.deletionProtection,
      removalPolicy: stage.removalPolicy,
    });
    for (const index of Object.values(indexes)) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType[index.projection],
      });
    }

    // Every queue of shared/queues/settings.ts, each with a DLQ after maxReceiveCount (alarms: Monitoring).
    for (const [name, settings] of Object.entries(QUEUES) as [QueueName, QueueSettings][]) {
      const dlq = new sqs.Queue(this, `${pascal(name)}Dlq`, {
        queueName: `${queueNameOf(stage, name)}-dlq`,
        retentionPeriod: Duration.days(14),
        enforceSSL: true,
        encryption: sqs.QueueEncryption.SQS_MANAGED,
      });
      const queue = new sqs.Queue(this, `${pascal(name)}Queue`, {
        queueName: queueNameOf(stage, name),
        retentionPeriod: Duration.days(settings.retentionDays),
        visibilityTimeout: Duration.seconds(settings.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: dlq, maxReceiveCount: settings.maxReceiveCount },
        enforceSSL: true,
        encryption: sqs.QueueEncryption.SQS_MANAGED,
      });
      this.queues.set(name, { queue, dlq });
    }
    this.exportSecretsKey = new kms.Key(this, 'ExportSecretsKey', {
      description: `${prefix}: wraps the per-export data keys that seal batch-export destination secrets`,
      enableKeyRotation: true,
      // Same fate as the table whose sealed secrets it opens.
      removalPolicy: stage.removalPolicy,
    });
    /** The key is used only with an export's encryption context (shared/exports/secrets.ts). */
    const exportSecretsContext = {
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['organization_id', 'batch_export_id'] },
      Null: { 'kms:EncryptionContextKeys': 'false' },
    };
    const queueEnv = (names: readonly QueueName[]) => Object.fromEntries(names.map((n) => [QUEUES[n].urlEnv, this.queues.get(n)!.queue.queueUrl]));

    const makeFunction = (name: string, description: string, timeoutSeconds = API_TIMEOUT_SECONDS) => {
      const functionName = functionNameOf(stage, name);
      // An explicit log group, rather than the one Lambda creates on first write, so retention and
      // removal follow the stage and `cdk destroy` leaves nothing behind in dev.
      const logGroup = new logs.LogGroup(this, `${pascal(name)}Logs`, {
        logGroupName: `/aws/lambda/${functionName}`,
        retention: stage.logRetention,
        removalPolicy: stage.removalPolicy,
      });
      // Our own role instead of AWSLambdaBasicExecutionRole (logs:* on every log group): this function
      // may write only its own log group. Table, queue and bucket grants are added per function below.
      const role = new iam.Role(this, `${pascal(name)}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `${functionName}: its own log group, X-Ray, and the grants of its route-table row`,
      });
      logGroup.grantWrite(role);
      const fn = new lambda.Function(this, `${pascal(name)}Function`, {
        functionName,
        description,
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        handler: 'index.handler',
        code: code(name),
        memorySize: stage.lambdaMemoryMb,
        timeout: Duration.seconds(timeoutSeconds),
        role,
        logGroup,
        tracing: lambda.Tracing.ACTIVE,
        environment: {
          [ENV.tableName]: this.table.tableName,
          [ENV.serviceName]: serviceNameOf(stage),
          [ENV.stage]: stage.name,
        },
      });
      this.functions.set(name, fn);
      return fn;
    };

    // The fallback only answers 404/405/308 from the route table: it never touches the table.
    const fallback = makeFunction(FALLBACK_FUNCTION, 'Unmatched requests: 404, 405, trailing-slash redirect');

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

    for (const r of routes as readonly Route[]) {
      const fn = makeFunction(r.operationId, `${r.method} ${r.path}`);
      if (r.access === 'read') this.table.grantReadData(fn);
      if (r.access === 'write') this.table.grantReadWriteData(fn);
      if (r.writesCache) {
        // Fine-grained access: PutItem only on items whose partition key is a trend cache key.
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['dynamodb:PutItem'],
            resources: [this.table.tableArn],
            conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${itemKeys.trendCachePkPrefix}*`] } },
          }),
        );
      }
      if (r.access !== 'write' && (r.auth === undefined || r.auth === 'personal_api_key')) {
        // Per-key rate limits (shared/db/rate-limits.ts) count every authenticated request with an
        // UpdateItem on RATE# items: the one write a read-only operation may do. Write routes already can.
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['dynamodb:UpdateItem'],
            resources: [this.table.tableArn],
            conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${itemKeys.rateLimitPkPrefix}*`] } },
          }),
        );
      }
      if (r.sealsSecrets) {
        // Seals new destination secrets; only the exporter may open them (kms:Decrypt).
        fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['kms:GenerateDataKey'], resources: [this.exportSecretsKey.keyArn], conditions: exportSecretsContext }));
        fn.addEnvironment(ENV.exportSecretsKmsKeyId, this.exportSecretsKey.keyArn);
      }
      for (const q of r.sends ?? []) {
        this.queues.get(q)!.queue.grantSendMessages(fn);
        fn.addEnvironment(QUEUES[q].urlEnv, this.queues.get(q)!.queue.queueUrl);
      }
      const integration = new HttpLambdaIntegration(`${pascal(r.operationId)}Integration`, fn);
      // Capture answers on several paths: one route each, one function.
      for (const p of routePaths.filter((x) => x.operationId === r.operationId)) {
        this.api.addRoutes({ path: apiGatewayPath(p.path), methods: [apigwv2.HttpMethod[p.method]], integration });
      }
    }

    this.ingestFailures = new sqs.Queue(this, 'IngestFailures', {
      queueName: `${prefix}-ingest-failures`,
      retentionPeriod: Duration.days(14),
      enforceSSL: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
    });
    for (const w of workers as readonly Worker[]) {
      const fn = makeFunction(w.name, w.summary, w.timeoutSeconds);
      this.table.grantReadWriteData(fn);
      for (const q of w.consumes ?? []) this.queues.get(q)!.queue.grantConsumeMessages(fn);
      if (w.writesDestinations) {
        // The exporter never writes with its own identity: no S3 permission at all. A destination brings
        // its own keys (sealed: only this role may Decrypt them) or names a role in the customer's
        // account, assumed with the organization id as ExternalId. Any role ARN is allowed because the
        // customer's trust policy (principal = this role, sts:ExternalId = their organization id) is
        // what gates it; roles of this account are denied so a tenant cannot name one of ours.
        fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: ['arn:*:iam::*:role/*'] }));
        fn.addToRolePolicy(new iam.PolicyStatement({ effect: iam.Effect.DENY, actions: ['sts:AssumeRole'], resources: [`arn:${Aws.PARTITION}:iam::${Aws.ACCOUNT_ID}:role/*`] }));
        fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['kms:Decrypt'], resources: [this.exportSecretsKey.keyArn], conditions: exportSecretsContext }));
        fn.addEnvironment(ENV.exportSecretsKmsKeyId, this.exportSecretsKey.keyArn);
      }
      for (const [k, val] of Object.entries(queueEnv([...(w.consumes ?? []), ...(w.continuesVia ? [w.continuesVia] : []), ...(w.sends ?? [])]))) fn.addEnvironment(k, val);
      for (const q of w.sends ?? []) this.queues.get(q)!.queue.grantSendMessages(fn);
      if (w.continuesVia) {
        // A run that cannot finish the backlog leaves a note on this queue, which starts the next run.
        const continuation = this.queues.get(w.continuesVia)!.queue;
        continuation.grantSendMessages(fn);
        fn.addEventSource(new SqsEventSource(continuation, { batchSize: 1 }));
      }
      if ('schedule' in w.trigger) {
        this.schedules.set(
          w.name,
          new events.Rule(this, `${pascal(w.name)}Schedule`, {
            ruleName: `${prefix}-${w.name}`,
            description: w.summary,
            schedule: events.Schedule.expression(w.trigger.schedule),
            targets: [new targets.LambdaFunction(fn, { retryAttempts: 2 })],
          }),
        );
        continue;
      }
      if ('queue' in w.trigger) {
        // Messages arrive in batches; the worker reports the ones that failed, so SQS retries only those.
        fn.addEventSource(new SqsEventSource(this.queues.get(w.trigger.queue)!.queue, { batchSize: 10, reportBatchItemFailures: true }));
        continue;
      }
      // The stream itself: only raw event items reach the worker (same filter the local poller applies).
      fn.addEventSource(
        new DynamoEventSource(this.table, {
          startingPosition: lambda.StartingPosition.TRIM_HORIZON,
          batchSize: 500,
          maxBatchingWindow: Duration.seconds(1),
          reportBatchItemFailures: true,
          bisectBatchOnError: true,
          retryAttempts: 10,
          maxRecordAge: Duration.days(1),
          // Records the worker gave up on land here (metadata only: shard and sequence range to replay).
          onFailure: new SqsDlq(this.ingestFailures),
          filters: [
            lambda.FilterCriteria.filter({
              dynamodb: {
                Keys: {
                  pk: { S: lambda.FilterRule.beginsWith(RAW_EVENT_RECORD_FILTER.pkPrefix) },
                  sk: { S: lambda.FilterRule.isEqual(RAW_EVENT_RECORD_FILTER.sk) },
                },
              },
            }),
          ],
        }),
      );
    }

    const edgeFunction = new cloudfront.Function(this, 'StripTrailingSlash', {
      code: cloudfront.FunctionCode.fromFile({ filePath: EDGE_FUNCTION_FILE }),
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      comment: 'Strip one trailing slash; pass the viewer host as x-forwarded-host',
    });

    if (stage.cloudFrontAccessLogs) {
      // CloudFront standard logs need ACLs on the bucket (object writer). Kept for the stage's log retention.
      this.edgeLogBucket = new s3.Bucket(this, 'EdgeLogs', {
        encryption: s3.BucketEncryption.S3_MANAGED,
        blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
        enforceSSL: true,
        objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
        lifecycleRules: [{ expiration: Duration.days(stage.logRetention) }],
        removalPolicy: stage.removalPolicy,
      });
    }

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
}
