import { createHash } from 'node:crypto';
import { Aws, Duration } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { API_TIMEOUT_SECONDS, routePaths, type Route, type Worker } from '#functions/routes.ts';
import { ENV } from '#shared/config.ts';
import { keys as itemKeys } from '#shared/db/keys.ts';
import { RAW_EVENT_RECORD_FILTER } from '#shared/db/stream.ts';
import { bracedPath } from '#shared/http/path-template.ts';
import { QUEUES, type QueueName } from '#shared/queue-settings.ts';
import { pascal } from '#infra/constructs/monitoring.ts';
import type { StatefulResources } from '#infra/constructs/stateful.ts';
import { resourcePrefix, type StageSettings } from '#infra/stages.ts';

export const SERVICE_NAME = 'analytics';

/**
 * POWERTOOLS_SERVICE_NAME of a stage's functions, hence the `service` field of its logs and the `service`
 * dimension of its custom metrics: per stage, so two stages in one account never share a metric.
 */
export const serviceNameOf = (stage: Pick<StageSettings, 'name'>) => `${SERVICE_NAME}-${stage.name}`;

/** Lambda's limit on a function name. */
const MAX_FUNCTION_NAME = 64;

/**
 * `analytics-<stage>-<name>`: the Lambda function name. A name that would pass Lambda's 64 characters
 * (a long PostHog operation id on a long stage name) keeps its start and ends in 6 hex digits of its
 * full name's hash, so it stays readable and unique (checked in test/infra for the longest stage name).
 */
export function functionNameOf(stage: Pick<StageSettings, 'name'>, name: string): string {
  const full = `${resourcePrefix(stage)}-${name}`;
  if (full.length <= MAX_FUNCTION_NAME) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 6);
  return `${full.slice(0, MAX_FUNCTION_NAME - hash.length - 1)}-${hash}`;
}

/**
 * What a route or worker row lets its function do, in one shape for both: the only input of the
 * function's IAM grants (besides its own log group and X-Ray, which every function has). A worker's
 * trigger adds what reading it takes (the stream, the triggering queue), granted by its event source.
 */
export interface Permissions {
  /** `read`: read-only IAM on the table and its indexes; `write`: read/write; `none`: nothing. */
  table: 'read' | 'write' | 'none';
  /** UpdateItem on RATE# items only: a key-authenticated request counts its rate limits, read-only or not. */
  countsRateLimits?: boolean;
  /** PutItem on trend cache items only. */
  writesCache?: boolean;
  /** Async query items: `status` UpdateItem on QUERY#; `results` also PutItem on QUERY# and QUERYCACHE#. */
  writesQueries?: 'status' | 'results';
  /** kms:GenerateDataKey on the export secrets key, with an export's encryption context (never Decrypt). */
  sealsSecrets?: boolean;
  /** kms:Decrypt of sealed secrets and sts:AssumeRole into customers' accounts (never this account's roles). */
  writesDestinations?: boolean;
  /** sts:AssumeRole into customers' accounts only (the destination check), without opening sealed keys. */
  assumesDestinationRoles?: boolean;
  sends?: readonly QueueName[];
  consumes?: readonly QueueName[];
}

/** The permissions a route row declares. Write routes already may update RATE# items. */
export const routePermissions = (r: Route): Permissions => ({
  table: r.access,
  countsRateLimits: r.access !== 'write' && (r.auth === undefined || r.auth === 'personal_api_key'),
  writesCache: r.writesCache,
  writesQueries: r.writesQueries,
  sealsSecrets: r.sealsSecrets,
  assumesDestinationRoles: r.assumesDestinationRoles,
  sends: r.sends,
});

/** The permissions a worker row declares: a run that cannot finish leaves a note on `continuesVia`. */
export const workerPermissions = (w: Worker): Permissions => ({
  table: w.access,
  writesCache: w.writesCache,
  writesQueries: w.writesQueries,
  writesDestinations: w.writesDestinations,
  sends: [...(w.sends ?? []), ...(w.continuesVia ? [w.continuesVia] : [])],
  consumes: w.consumes,
});

/** The export secrets key is used only with an export's encryption context (shared/exports/secrets.ts). */
const EXPORT_SECRETS_CONTEXT = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['organization_id', 'batch_export_id'] },
  Null: { 'kms:EncryptionContextKeys': 'false' },
};

/** Item-level access: the action only on items whose partition key starts with `pkPrefix`. */
const onItemsStartingWith = (action: string, table: StatefulResources['table'], ...pkPrefixes: string[]) =>
  new iam.PolicyStatement({
    actions: [action],
    resources: [table.tableArn],
    conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': pkPrefixes.map((p) => `${p}*`) } },
  });

export interface ServiceFunctionProps {
  stage: StageSettings;
  stateful: StatefulResources;
  /** Where the function's code comes from (the bundle of `npm run build`, or inline code in tests). */
  code: (functionName: string) => lambda.Code;
}

/**
 * One Lambda with its own log group and its own role, granted exactly `permissions`. Its construct id
 * prefixes its children's logical ids (`logicalIdPrefix`, infra/constructs/logical-ids.ts):
 * `OrganizationsList` + `Function` is the `OrganizationsListFunction…` a deployed stage already has.
 */
export class ServiceFunction extends Construct {
  readonly logicalIdPrefix: string;
  readonly fn: lambda.Function;

  constructor(
    scope: Construct,
    name: string,
    description: string,
    permissions: Permissions,
    props: ServiceFunctionProps & { timeoutSeconds?: number; reservedConcurrency?: number },
  ) {
    super(scope, pascal(name));
    this.logicalIdPrefix = this.node.id;
    const { stage, stateful } = props;
    const functionName = functionNameOf(stage, name);
    // An explicit log group, rather than the one Lambda creates on first write, so retention and
    // removal follow the stage and `cdk destroy` leaves nothing behind in dev.
    const logGroup = new logs.LogGroup(this, 'Logs', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: stage.logRetention,
      removalPolicy: stage.removalPolicy,
    });
    // Our own role instead of AWSLambdaBasicExecutionRole (logs:* on every log group): this function
    // may write only its own log group, plus what its row declares.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `${functionName}: its own log group, X-Ray, and the grants of its route-table row`,
    });
    logGroup.grantWrite(role);
    this.fn = new lambda.Function(this, 'Function', {
      functionName,
      description,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      handler: 'index.handler',
      code: props.code(name),
      memorySize: stage.lambdaMemoryMb,
      timeout: Duration.seconds(props.timeoutSeconds ?? API_TIMEOUT_SECONDS),
      reservedConcurrentExecutions: props.reservedConcurrency,
      role,
      logGroup,
      tracing: lambda.Tracing.ACTIVE,
      environment: {
        [ENV.tableName]: stateful.table.tableName,
        [ENV.serviceName]: serviceNameOf(stage),
        [ENV.stage]: stage.name,
      },
    });
    this.grant(permissions, stateful);
  }

  private grant(p: Permissions, stateful: StatefulResources) {
    const { fn } = this;
    const { table, exportSecretsKey } = stateful;
    if (p.table === 'read') table.grantReadData(fn);
    if (p.table === 'write') table.grantReadWriteData(fn);
    if (p.writesCache) fn.addToRolePolicy(onItemsStartingWith('dynamodb:PutItem', table, itemKeys.trendCachePkPrefix));
    if (p.writesQueries === 'results')
      fn.addToRolePolicy(
        onItemsStartingWith('dynamodb:PutItem', table, itemKeys.queryPkPrefix, itemKeys.queryCachePkPrefix),
      );
    if (p.writesQueries) fn.addToRolePolicy(onItemsStartingWith('dynamodb:UpdateItem', table, itemKeys.queryPkPrefix));
    if (p.countsRateLimits)
      fn.addToRolePolicy(onItemsStartingWith('dynamodb:UpdateItem', table, itemKeys.rateLimitPkPrefix));
    if (p.sealsSecrets) {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['kms:GenerateDataKey'],
          resources: [exportSecretsKey.keyArn],
          conditions: EXPORT_SECRETS_CONTEXT,
        }),
      );
    }
    if (p.writesDestinations || p.assumesDestinationRoles) {
      // The exporter never writes with its own identity: no S3 permission at all. A destination brings
      // its own keys (sealed: only this role may Decrypt them) or names a role in the customer's
      // account, assumed with the organization id as ExternalId. Any role ARN is allowed because the
      // customer's trust policy (principal = this role, sts:ExternalId = their organization id) is
      // what gates it; roles of this account are denied so a tenant cannot name one of ours.
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: ['arn:*:iam::*:role/*'] }));
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          effect: iam.Effect.DENY,
          actions: ['sts:AssumeRole'],
          resources: [`arn:${Aws.PARTITION}:iam::${Aws.ACCOUNT_ID}:role/*`],
        }),
      );
    }
    if (p.writesDestinations) {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: [exportSecretsKey.keyArn],
          conditions: EXPORT_SECRETS_CONTEXT,
        }),
      );
    }
    if (p.sealsSecrets || p.writesDestinations) fn.addEnvironment(ENV.exportSecretsKmsKeyId, exportSecretsKey.keyArn);
    for (const q of p.consumes ?? []) {
      stateful.queue(q).grantConsumeMessages(fn);
      fn.addEnvironment(QUEUES[q].urlEnv, stateful.queue(q).queueUrl);
    }
    for (const q of p.sends ?? []) {
      stateful.queue(q).grantSendMessages(fn);
      fn.addEnvironment(QUEUES[q].urlEnv, stateful.queue(q).queueUrl);
    }
  }
}

/**
 * An API operation: its function, granted what its row declares, behind each of its paths. Its routes are
 * created in `routes`, a construct of the operation's own stack named `HttpApi` whose routes keep the
 * logical ids they had as children of the API itself (`HttpApiGETapi…`).
 */
export class RouteFunction extends ServiceFunction {
  constructor(
    scope: Construct,
    route: Route,
    props: ServiceFunctionProps & { api: apigwv2.HttpApi; routes: Construct },
  ) {
    super(scope, route.operationId, `${route.method} ${route.path}`, routePermissions(route), props);
    // Capture and every environment-level operation (also under /api/projects) answer on several paths: one route each, one function.
    const paths = routePaths.filter((x) => x.operationId === route.operationId);
    // Several paths share one invoke permission for this API instead of one per route: each is a stack
    // resource, and a CloudFormation stack holds at most 500 (docs/query-api.md, Paths).
    const integration = new HttpLambdaIntegration(`${pascal(route.operationId)}Integration`, this.fn, {
      scopePermissionToRoute: paths.length === 1,
    });
    for (const p of paths) {
      const path = bracedPath(p.path);
      const method = apigwv2.HttpMethod[p.method];
      // The id HttpApi.addRoutes gives a route, so the logical id does not change with the stack.
      new apigwv2.HttpRoute(props.routes, `${method}${path}`, {
        httpApi: props.api,
        routeKey: apigwv2.HttpRouteKey.with(path, method),
        integration,
      });
    }
  }
}

/** A worker: its function, granted what its row declares, fed by its trigger (schedule, queue or table stream). */
export class WorkerFunction extends ServiceFunction {
  readonly schedule?: events.Rule;

  constructor(scope: Construct, worker: Worker, props: ServiceFunctionProps) {
    super(scope, worker.name, worker.summary, workerPermissions(worker), {
      ...props,
      timeoutSeconds: worker.timeoutSeconds,
      reservedConcurrency: worker.concurrency?.reserved,
    });
    const { stage, stateful } = props;
    if (worker.continuesVia) {
      // A run that cannot finish the backlog leaves a note on this queue, which starts the next run.
      this.fn.addEventSource(new SqsEventSource(stateful.queue(worker.continuesVia), { batchSize: 1 }));
    }
    if ('schedule' in worker.trigger) {
      this.schedule = new events.Rule(this, 'Schedule', {
        ruleName: `${resourcePrefix(stage)}-${worker.name}`,
        description: worker.summary,
        schedule: events.Schedule.expression(worker.trigger.schedule),
        targets: [new targets.LambdaFunction(this.fn, { retryAttempts: 2 })],
      });
      return;
    }
    if ('queue' in worker.trigger) {
      // Messages arrive in batches; the worker reports the ones that failed, so SQS retries only those.
      this.fn.addEventSource(
        new SqsEventSource(stateful.queue(worker.trigger.queue), {
          batchSize: worker.batchSize ?? 10,
          reportBatchItemFailures: true,
          maxConcurrency: worker.concurrency?.maxFromQueue,
        }),
      );
      return;
    }
    // The stream itself: only raw event items reach the worker (same filter the local poller applies).
    this.fn.addEventSource(
      new DynamoEventSource(stateful.table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 500,
        maxBatchingWindow: Duration.seconds(1),
        reportBatchItemFailures: true,
        bisectBatchOnError: true,
        retryAttempts: 10,
        maxRecordAge: Duration.days(1),
        // Records the worker gave up on land here (metadata only: shard and sequence range to replay).
        onFailure: new SqsDlq(stateful.ingestFailures),
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
}
