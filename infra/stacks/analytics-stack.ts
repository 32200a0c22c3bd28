import { Aws, CfnOutput, Duration, NestedStack, Stack, Token, type CfnElement, type StackProps } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { QUEUES, type QueueName } from '#shared/queue-settings.ts';
import { routes, workers, type Route, type Worker } from '#functions/routes.ts';
import { bundleDir, FALLBACK_FUNCTION } from '#infra/build.ts';
import { logicalIdPath, makeUniqueId } from '#infra/constructs/logical-ids.ts';
import { Monitoring, pascal, type DeadLetterQueue } from '#infra/constructs/monitoring.ts';
import { Lake } from '#infra/constructs/lake.ts';
import { acknowledgeNagFindings } from '#infra/constructs/nag.ts';
import { PublicApi } from '#infra/constructs/public-api.ts';
import {
  RouteFunction,
  ServiceFunction,
  type ServiceFunctionProps,
  serviceNameOf,
  WorkerFunction,
} from '#infra/constructs/service-function.ts';
import { StatefulResources } from '#infra/constructs/stateful.ts';
import { resourcePrefix, type StageSettings } from '#infra/stages.ts';

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
 * what its row declares, PublicApi (the HTTP API and CloudFront in front of it), Monitoring's alarms
 * and the outputs. Monitoring (alarms, dashboard, alarm topic) is a nested stack: with it, the stack
 * came within a dozen resources of CloudFormation's 500 per stack.
 */
export class AnalyticsStack extends Stack {
  readonly stage: StageSettings;
  readonly stateful: StatefulResources;
  readonly table: dynamodb.Table;
  /** The queues of shared/queue-settings.ts with their DLQs. */
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
  /** Feature (the first folder of a route's handler) -> the nested stack of its API operations. */
  readonly apiStacks = new Map<string, ApiFeatureStack>();
  /** The nested stack that holds `monitoring` (its own template, `<id>.nested.template.json`). */
  readonly monitoringStack: NestedStack;
  readonly monitoring: Monitoring;
  /** The Parquet lake: bucket, Glue table, Athena workgroup (infra/constructs/lake.ts). */
  readonly lake: Lake;

  constructor(scope: Construct, id: string, props: AnalyticsStackProps) {
    super(scope, id, props);
    const { stage } = props;
    this.stage = stage;
    const prefix = resourcePrefix(stage);

    this.stateful = new StatefulResources(this, stage);
    ({
      table: this.table,
      queues: this.queues,
      ingestFailures: this.ingestFailures,
      exportSecretsKey: this.exportSecretsKey,
      edgeLogBucket: this.edgeLogBucket,
    } = this.stateful);
    const functionProps = {
      stage,
      stateful: this.stateful,
      code: props.code ?? ((name: string) => lambda.Code.fromAsset(bundleDir(name))),
    };

    // The fallback only answers 404/405/308 from the route table: it never touches the table.
    const fallback = new ServiceFunction(
      this,
      FALLBACK_FUNCTION,
      'Unmatched requests: 404, 405, trailing-slash redirect',
      { table: 'none' },
      functionProps,
    ).fn;
    this.functions.set(FALLBACK_FUNCTION, fallback);

    const publicApi = new PublicApi(this, 'PublicApi', { stage, fallback, edgeLogBucket: this.edgeLogBucket });
    ({
      api: this.api,
      apiStage: this.apiStage,
      apiAccessLogs: this.apiAccessLogs,
      distribution: this.distribution,
    } = publicApi);

    this.addFunctions(functionProps);
    this.lake = new Lake(this, 'Lake', { prefix, removalPolicy: stage.removalPolicy, functions: this.functions });
    this.monitoringStack = new NestedStack(this, 'MonitoringStack', {
      description: `Alarms, dashboard and alarm topic of ${prefix}`,
    });
    this.monitoring = this.addMonitoring(this.monitoringStack, prefix);
    acknowledgeNagFindings(this);
    this.addOutputs(prefix);
  }

  /**
   * One function per route-table row, in the nested stack of its feature (`ApiFeatureStack`), and one per
   * worker (with its schedule, if any) in this stack.
   */
  private addFunctions(functionProps: ServiceFunctionProps): void {
    for (const route of routes as readonly Route[]) {
      const feature = featureOf(route);
      let stack = this.apiStacks.get(feature);
      if (!stack) {
        stack = new ApiFeatureStack(this, feature);
        this.apiStacks.set(feature, stack);
      }
      const fn = new RouteFunction(stack, route, { ...functionProps, api: this.api, routes: stack.routes }).fn;
      this.functions.set(route.operationId, fn);
    }
    for (const worker of workers as readonly Worker[]) {
      const { fn, schedule } = new WorkerFunction(this, worker, functionProps);
      this.functions.set(worker.name, fn);
      if (schedule) this.schedules.set(worker.name, schedule);
    }
  }

  /** The ingest worker's on-failure queue and every queue's DLQ, for the dashboard and their alarms. */
  private deadLetterQueues(): DeadLetterQueue[] {
    return [
      {
        name: 'ingest-failures',
        queueName: physicalName(this.ingestFailures),
        meaning:
          'The ingest worker gave up on stream records: persons and rollups are missing those events until they are replayed.',
        period: Duration.minutes(1),
      },
      ...[...this.queues].map(([name, { dlq }]) => ({
        name: name.replaceAll('_', '-'),
        queueName: physicalName(dlq),
        meaning: `Messages of ${name} failed ${QUEUES[name].maxReceiveCount} times and sit in its DLQ.`,
      })),
    ];
  }

  /** Functions and queues by physical name: the API stage's id is the nested stack's one parameter. */
  private addMonitoring(scope: NestedStack, prefix: string): Monitoring {
    const workerNames = new Set<string>(workers.map((w) => w.name));
    const named = (keep: (name: string) => boolean) =>
      new Map([...this.functions].filter(([name]) => keep(name)).map(([name, fn]) => [name, physicalName(fn)]));
    return new Monitoring(scope, 'Monitoring', {
      stage: this.stage,
      prefix,
      serviceName: serviceNameOf(this.stage),
      apiFunctions: named((name) => !workerNames.has(name)),
      workerFunctions: named((name) => workerNames.has(name)),
      ingestWorker: physicalName(this.functions.get('ingest_events')!),
      apiStage: this.apiStage,
      deletionQueue: physicalName(this.queues.get('person_deletions')!.queue),
      deadLetterQueues: this.deadLetterQueues(),
    });
  }

  private addOutputs(prefix: string): void {
    const domain = this.stage.customDomain;
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
    new CfnOutput(this, 'AlarmTopicArn', {
      description: 'Every alarm of the stage notifies this topic: subscribe here',
      value: this.monitoring.topic.topicArn,
    });
    new CfnOutput(this, 'DashboardUrl', {
      value: `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${prefix}`,
    });
    new CfnOutput(this, 'PersonDeletionQueueUrl', { value: this.queues.get('person_deletions')!.queue.queueUrl });
    new CfnOutput(this, 'IngestFailuresQueueUrl', { value: this.ingestFailures.queueUrl });
  }

  /**
   * CDK's logical ids, except that a construct's `logicalIdPrefix` replaces its path component
   * (infra/constructs/logical-ids.ts): functions, roles, log groups, the API and the distribution keep
   * the ids they had when the stack created them directly, and are updated in place.
   */
  protected override allocateLogicalId(element: CfnElement): string {
    return makeUniqueId(logicalIdPath(this, element));
  }
}

/** The feature a route belongs to: the first folder of its handler (`batch-exports/list` -> `batch-exports`). */
export const featureOf = (route: Pick<Route, 'handler'>) => route.handler.split('/')[0]!;

/**
 * The API operations of one feature: each operation's function, role, log group, invoke permission and
 * routes (about 8 resources per operation). One stack held them all until it neared CloudFormation's 500
 * resources; a feature's stack holds at most ~160. Logical ids inside are the ones the resources had in
 * the stage's stack (`AnalyticsStack.allocateLogicalId`'s rule), so stack refactoring can move them
 * (docs/operations.md).
 */
export class ApiFeatureStack extends NestedStack {
  /** Where the feature's routes are created: its id gives them their former logical ids. */
  readonly routes: Construct;

  constructor(scope: AnalyticsStack, feature: string) {
    super(scope, `Api${pascal(feature)}Stack`, {
      description: `API operations of ${feature} (${resourcePrefix(scope.stage)})`,
    });
    this.routes = new Construct(this, 'HttpApi');
  }

  protected override allocateLogicalId(element: CfnElement): string {
    return makeUniqueId(logicalIdPath(this, element));
  }
}

/** The fixed name a function or queue was given (its FunctionName / QueueName), never a token. */
function physicalName(resource: lambda.Function | sqs.Queue): string {
  const cfn = resource.node.defaultChild;
  const name = cfn instanceof lambda.CfnFunction ? cfn.functionName : (cfn as sqs.CfnQueue).queueName;
  if (!name || Token.isUnresolved(name)) throw new Error(`${resource.node.path} has no fixed name`);
  return name;
}
