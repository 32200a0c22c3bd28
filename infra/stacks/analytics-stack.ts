import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Aws, CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import { QUEUES, type QueueName, type QueueSettings } from '#shared/queues/settings.ts';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as iam from 'aws-cdk-lib/aws-iam';
import { keys as itemKeys } from '#shared/db/keys.ts';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { routePaths, routes, workers, type Route, type Worker } from '#functions/routes.ts';
import { RAW_EVENT_RECORD_FILTER } from '#shared/db/stream.ts';
import { ENV } from '#shared/config.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { bundleDir, FALLBACK_FUNCTION } from '#infra/build.ts';
import type { StageSettings } from '#infra/stages.ts';

export const EDGE_FUNCTION_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'edge', 'strip-trailing-slash.js');

export const SERVICE_NAME = 'analytics';

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
  readonly table: dynamodb.Table;
  readonly api: apigwv2.HttpApi;
  readonly distribution: cloudfront.Distribution;
  /** On-failure destination of the ingest worker's stream mapping. */
  readonly ingestFailures: sqs.Queue;
  /** The queues of shared/queues/settings.ts with their DLQs. */
  readonly queues = new Map<QueueName, { queue: sqs.Queue; dlq: sqs.Queue }>();
  /** Function name (operationId, or FALLBACK_FUNCTION) -> Lambda. */
  readonly functions = new Map<string, lambda.Function>();

  constructor(scope: Construct, id: string, props: AnalyticsStackProps) {
    super(scope, id, props);
    const { stage } = props;
    const code = props.code ?? ((name: string) => lambda.Code.fromAsset(bundleDir(name)));

    const { indexes, ...keys } = TABLE_SCHEMA;
    this.table = new dynamodb.Table(this, 'Table', {
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

    // Every queue of shared/queues/settings.ts, each with a DLQ (after maxReceiveCount) and an alarm on it.
    for (const [name, settings] of Object.entries(QUEUES) as [QueueName, QueueSettings][]) {
      const dlq = new sqs.Queue(this, `${pascal(name)}Dlq`, { retentionPeriod: Duration.days(14), enforceSSL: true, encryption: sqs.QueueEncryption.SQS_MANAGED });
      const queue = new sqs.Queue(this, `${pascal(name)}Queue`, {
        retentionPeriod: Duration.days(settings.retentionDays),
        visibilityTimeout: Duration.seconds(settings.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: dlq, maxReceiveCount: settings.maxReceiveCount },
        enforceSSL: true,
        encryption: sqs.QueueEncryption.SQS_MANAGED,
      });
      new cloudwatch.Alarm(this, `${pascal(name)}DlqAlarm`, {
        alarmDescription: `Messages of ${name} failed ${settings.maxReceiveCount} times and sit in its DLQ: inspect, fix, redrive`,
        metric: dlq.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5) }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      this.queues.set(name, { queue, dlq });
    }
    const queueEnv = (names: readonly QueueName[]) => Object.fromEntries(names.map((n) => [QUEUES[n].urlEnv, this.queues.get(n)!.queue.queueUrl]));

    const makeFunction = (name: string, description: string, timeoutSeconds = 10) => {
      // An explicit log group, rather than the one Lambda creates on first write, so retention and
      // removal follow the stage and `cdk destroy` leaves nothing behind in dev.
      const logGroup = new logs.LogGroup(this, `${pascal(name)}Logs`, {
        retention: stage.logRetention,
        removalPolicy: stage.removalPolicy,
      });
      const fn = new lambda.Function(this, `${pascal(name)}Function`, {
        description,
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        handler: 'index.handler',
        code: code(name),
        memorySize: stage.lambdaMemoryMb,
        // API functions: above Lambda's 3 s default for cold starts, well under the HTTP API's 30 s limit.
        timeout: Duration.seconds(timeoutSeconds),
        logGroup,
        environment: {
          [ENV.tableName]: this.table.tableName,
          [ENV.serviceName]: SERVICE_NAME,
          [ENV.stage]: stage.name,
        },
      });
      this.functions.set(name, fn);
      return fn;
    };

    // The fallback only answers 404/405/308 from the route table: it never touches the table.
    const fallback = makeFunction(FALLBACK_FUNCTION, 'Unmatched requests: 404, 405, trailing-slash redirect');

    this.api = new apigwv2.HttpApi(this, 'HttpApi', {
      apiName: `${SERVICE_NAME}-${stage.name}`,
      // API Gateway's own 404 is `{"message":"Not Found"}`; the fallback answers in the API's error shape.
      defaultIntegration: new HttpLambdaIntegration('FallbackIntegration', fallback),
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
      retentionPeriod: Duration.days(14),
      enforceSSL: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
    });
    for (const w of workers as readonly Worker[]) {
      const fn = makeFunction(w.name, w.summary, w.timeoutSeconds);
      this.table.grantReadWriteData(fn);
      for (const q of w.consumes ?? []) this.queues.get(q)!.queue.grantConsumeMessages(fn);
      if (w.writesDestinations) {
        // Buckets are named by users in their export configs (or reached with their own keys), so the
        // role may only put objects (and clean up failed multipart uploads), in any bucket.
        fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:PutObject', 's3:AbortMultipartUpload'], resources: ['arn:aws:s3:::*/*'] }));
      }
      for (const [k, val] of Object.entries(queueEnv([...(w.consumes ?? []), ...(w.continuesVia ? [w.continuesVia] : [])]))) fn.addEnvironment(k, val);
      if (w.continuesVia) {
        // A run that cannot finish the backlog leaves a note on this queue, which starts the next run.
        const continuation = this.queues.get(w.continuesVia)!.queue;
        continuation.grantSendMessages(fn);
        fn.addEventSource(new SqsEventSource(continuation, { batchSize: 1 }));
      }
      if ('schedule' in w.trigger) {
        new events.Rule(this, `${pascal(w.name)}Schedule`, {
          description: w.summary,
          schedule: events.Schedule.expression(w.trigger.schedule),
          targets: [new targets.LambdaFunction(fn, { retryAttempts: 2 })],
        });
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
    // Records the worker gave up on land in the queue (metadata only: shard and sequence range to replay).
    new cloudwatch.Alarm(this, 'IngestFailuresAlarm', {
      alarmDescription: 'Ingest worker gave up on stream records: persons/rollups are missing events until replayed',
      metric: this.ingestFailures.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    const edgeFunction = new cloudfront.Function(this, 'StripTrailingSlash', {
      code: cloudfront.FunctionCode.fromFile({ filePath: EDGE_FUNCTION_FILE }),
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      comment: 'Strip one trailing slash; pass the viewer host as x-forwarded-host',
    });

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: `${SERVICE_NAME}-${stage.name} API`,
      defaultBehavior: {
        origin: new origins.HttpOrigin(`${this.api.apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`, {
          protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
        }),
        allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        // Every response is per-key and per-tenant. With caching disabled the AllViewer policies also
        // forward Authorization; Host is left out because API Gateway rejects a foreign Host.
        cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
        originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        functionAssociations: [{ function: edgeFunction, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
      },
    });

    new CfnOutput(this, 'ApiBaseUrl', {
      description: 'Public API base URL (CloudFront; serves both /path and /path/)',
      value: `https://${this.distribution.distributionDomainName}`,
    });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
  }
}

/** `organizations_list` -> `OrganizationsList`: stable, readable construct ids. */
function pascal(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
