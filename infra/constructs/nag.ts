/**
 * cdk-nag (AwsSolutions) findings this stack accepts, each on the narrowest construct and with the
 * reason. Everything else is fixed in the stack (own log-writer roles instead of
 * AWSLambdaBasicExecutionRole, SSL-only encrypted queues, an SSL-only alarm topic, API access logs, TLS 1.2 to the
 * origin, PITR and CloudFront logs in prod). test/infra/nag.test.ts runs the pack on every stage and
 * wants zero unacknowledged errors or warnings.
 */
import { Names, Stack, Validations, type CfnElement } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { routes, workers, type Route } from '#functions/routes.ts';
import { FALLBACK_FUNCTION } from '#infra/build.ts';
import type { StageSettings } from '#infra/stages.ts';

/**
 * What the acknowledgements need of the stack (AnalyticsStack has all of it). Named here rather than
 * imported, because the stack calls this file: importing it back would make a cycle.
 */
export interface NaggedStack extends Stack {
  readonly stage: StageSettings;
  readonly table: dynamodb.Table;
  readonly functions: ReadonlyMap<string, lambda.Function>;
  readonly api: apigwv2.HttpApi;
  /** Each API feature stack's `routes`: the construct that holds its routes. */
  readonly apiStacks: ReadonlyMap<string, { readonly routes: IConstruct }>;
  readonly ingestFailures: sqs.Queue;
  readonly distribution: cloudfront.Distribution;
  readonly edgeLogBucket?: s3.Bucket;
}

export interface NagAcknowledgement {
  /** Rule id, with the finding in brackets for rules that report several (IAM5). */
  id: string;
  reason: string;
}

function acknowledge(scopes: IConstruct | IConstruct[], ...acks: NagAcknowledgement[]) {
  for (const scope of [scopes].flat()) Validations.of(scope).acknowledge(...acks);
}

export function acknowledgeNagFindings(stack: NaggedStack): void {
  acknowledgeFunctionFindings(stack);
  acknowledgeServiceFindings(stack);
  acknowledgeEdgeFindings(stack);
}

/** Each function's runtime and its role's wildcard resources (tracing, the stream, the table's indexes). */
function acknowledgeFunctionFindings(stack: NaggedStack): void {
  const table = stack.table.node.defaultChild as CfnElement;
  // How nag prints the table's ARN: the attribute, as its aspect sees every stack; in a feature stack's
  // synthesized template (the validation plugin's view), the parameter CDK passes it in as
  // (`reference-to-<unique id><attribute>`, named by CDK's nested-stack references).
  const tableArnsIn = (fn: lambda.Function) => [
    `<${stack.getLogicalId(table)}.Arn>`,
    ...(Stack.of(fn) === stack ? [] : [`<referenceto${Names.uniqueId(table)}Arn>`]),
  ];
  // Functions whose route-table row grants no table access: their roles have no index/* resource.
  const tableless = new Set<string>([
    FALLBACK_FUNCTION,
    ...(routes as readonly Route[]).filter((r) => r.access === 'none').map((r) => r.operationId),
  ]);
  const streamWorkers = new Set<string>(workers.filter((w) => 'stream' in w.trigger).map((w) => w.name));

  for (const [name, fn] of stack.functions) {
    acknowledge(fn, {
      id: 'AwsSolutions-L1',
      reason:
        'Runtime pinned to nodejs22.x on purpose: the bundles are built for target node22 (infra/build.ts) and the local runtime and tests run Node 20/22. Moving to nodejs24.x is a deliberate change of build target, runtime and test matrix together.',
    });
    const role = fn.role!;
    acknowledge(role, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: streamWorkers.has(name)
        ? "Two actions that have no resource-level permissions: xray:PutTraceSegments/PutTelemetryRecords (active tracing) and dynamodb:ListStreams (the stream event source mapping). Stream reads themselves are scoped to this table's stream ARN."
        : 'xray:PutTraceSegments and xray:PutTelemetryRecords (Lambda active tracing) have no resource-level permissions in IAM; nothing else in this role uses a wildcard resource.',
    });
    if (!tableless.has(name)) {
      for (const tableArn of tableArnsIn(fn))
        acknowledge(role, {
          id: `AwsSolutions-IAM5[Resource::${tableArn}/index/*]`,
          reason:
            "The table's global secondary indexes (table ARN + /index/*): only this one table's indexes, with the same read-only or read/write actions as the table grant (read-only operations cannot write: asserted in test/infra/stack.test.ts).",
        });
    }
  }
}

/** The export role's cross-account AssumeRole, the API's in-function auth, the ingest DLQ, the table's PITR. */
function acknowledgeServiceFindings(stack: NaggedStack): void {
  const { stage } = stack;
  // The exporter, and the routes that check a destination before it is saved (`assumesDestinationRoles`).
  const assumers = [
    'run_batch_exports',
    ...(routes as readonly Route[]).filter((r) => r.assumesDestinationRoles).map((r) => r.operationId),
  ];
  for (const name of assumers)
    acknowledge(stack.functions.get(name)!.role!, {
      id: 'AwsSolutions-IAM5[Resource::arn:*:iam::*:role/*]',
      reason:
        "Batch export destinations may name a role in the customer's account, known only at run time. The statement allows only sts:AssumeRole; the customer's trust policy must name this role and require sts:ExternalId = the organization id (always sent), and roles of this stack's own account are denied by an explicit Deny. The role has no S3 permission: uploads are signed with the destination's own or assumed credentials.",
    });

  // The API's own $default route, and each feature stack's routes.
  const routeScopes = [stack.api, ...[...stack.apiStacks.values()].map((s) => s.routes)];
  acknowledge(routeScopes, {
    id: 'AwsSolutions-APIG4',
    reason:
      'Every route authenticates inside its function, as PostHog does: personal API keys (Authorization: Bearer phx_..., stored as sha256 hashes, scope and organization checks), the project token inside the payload for capture, and /api/schema is public by design. An API Gateway authorizer would repeat the key lookup on every request and cannot express the per-route scopes; the $default route only answers 404/405 in the API error shape.',
  });

  acknowledge(stack.ingestFailures, {
    id: 'AwsSolutions-SQS3',
    reason:
      "This queue is itself a dead-letter destination: the ingest worker's stream mapping sends the shard/sequence range of records it gave up on here. Nothing consumes it automatically (an operator replays from it, docs/operations.md), so a further DLQ would never receive anything; it has its own depth alarm.",
  });

  if (!stage.pointInTimeRecovery) {
    acknowledge(stack.table, {
      id: 'AwsSolutions-DDB3',
      reason: `Stage '${stage.name}' is a disposable non-prod stage (removal policy DESTROY, data recreated from tests or seeds); prod has point-in-time recovery on, asserted in test/infra/stages.test.ts.`,
    });
  }
}

/** The CloudFront distribution (geo, WAF, logs, TLS) and its log bucket. */
function acknowledgeEdgeFindings(stack: NaggedStack): void {
  const { stage } = stack;
  acknowledge(
    stack.distribution,
    {
      id: 'AwsSolutions-CFR1',
      reason:
        'No geo restriction: PostHog SDKs send events from end users anywhere in the world, and the management API is used from wherever the customer is. Access is controlled by API keys and project tokens, not by country.',
    },
    {
      id: 'AwsSolutions-CFR2',
      reason:
        'No WAF web ACL: its fixed monthly cost per stage is not justified yet. The outer guard is API Gateway stage throttling (rate and burst per stage, infra/stages.ts), the inner one the per-key limits in the code. Attach a web ACL (rate-based rules) to the distribution when abuse shows up.',
    },
  );
  if (!stack.edgeLogBucket) {
    acknowledge(stack.distribution, {
      id: 'AwsSolutions-CFR3',
      reason: `Stage '${stage.name}' keeps no CloudFront standard logs (an ACL-enabled bucket that would block cdk destroy of a disposable stage). Every request that reaches the API is in the API Gateway access log group with the stage retention; prod keeps CloudFront logs too (cloudFrontAccessLogs in infra/stages.ts).`,
    });
  }
  if (!stage.customDomain) {
    acknowledge(stack.distribution, {
      id: 'AwsSolutions-CFR4',
      reason:
        'The distribution serves the default *.cloudfront.net certificate, whose viewer security policy CloudFront fixes (it still negotiates TLS 1.2+ with current clients); the minimum protocol can only be set with a custom certificate. With customDomain set the stage gets TLSv1.2_2021. Origin traffic is HTTPS-only with TLS 1.2.',
    });
  }
  if (stack.edgeLogBucket) {
    acknowledge(stack.edgeLogBucket, {
      id: 'AwsSolutions-S1',
      reason:
        'This bucket is the access-log destination (CloudFront standard logs); logging access to the log bucket would need yet another bucket. It blocks public access, enforces SSL, and expires objects after the stage log retention.',
    });
  }
}
