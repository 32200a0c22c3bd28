import { METRIC as CUSTOM_METRICS, METRICS_NAMESPACE } from '#shared/metric-names.ts';
import { Duration } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { StageSettings } from '#infra/stages.ts';

/**
 * The custom metrics the code emits (shared/observability.ts, EMF through Powertools Metrics). Every
 * one carries Powertools' `service` dimension (POWERTOOLS_SERVICE_NAME, `analytics-<stage>`, so two
 * stages in one account never mix). API metrics also carry `operation` (the operationId); CaptureEvents
 * carries `outcome`. Alarms read the worker metrics with exactly the `service` dimension; the dashboard
 * uses SEARCH, so extra dimensions never hide a series there.
 */
// One list for what the code emits and what is alarmed on (shared/metric-names.ts).
export { METRICS_NAMESPACE, CUSTOM_METRICS };

/** Section of docs/operations.md for each kind of alarm; every alarm description names its section. */
export const RUNBOOK = {
  functionErrors: 'function-errors',
  functionThrottles: 'function-throttles',
  api5xxRate: 'api-5xx-rate',
  apiLatency: 'api-latency-p99',
  ingestIteratorAge: 'ingest-iterator-age',
  ingestFailures: 'ingest-failures',
  deadLetterQueue: 'dead-letter-queue',
  exportFailures: 'batch-export-failures',
  drainNotCompleted: 'drain-not-completed',
  deletionOverdue: 'deletion-request-overdue',
} as const;
export const RUNBOOK_DOC = 'docs/operations.md';

/**
 * A deletion request older than this has waited through a Sunday drain without being handled: at most
 * 7 days until the next 05:00 UTC run, plus the ~2 h a drain may take, plus 2 h of slack.
 */
export const DELETION_OVERDUE_SECONDS = (7 * 24 + 4) * 3600;

export interface DeadLetterQueue {
  /** Short name used in the alarm name: `<prefix>-<name>-dlq-depth`. */
  name: string;
  /** The queue's physical name (its QueueName dimension). */
  queueName: string;
  /** What a message in it means, for the alarm description. */
  meaning: string;
  /** Period of the depth check. */
  period?: Duration;
}

export interface MonitoringProps {
  stage: StageSettings;
  /** `analytics-<stage>`: prefix of alarm names and the dashboard name. */
  prefix: string;
  /** Value of the `service` dimension on custom metrics (POWERTOOLS_SERVICE_NAME of every function). */
  serviceName: string;
  /** API functions (routes and the fallback): name -> physical function name. */
  apiFunctions: ReadonlyMap<string, string>;
  /** Stream and scheduled workers: name -> physical function name. */
  workerFunctions: ReadonlyMap<string, string>;
  /** Physical name of the ingest worker. */
  ingestWorker: string;
  apiStage: apigwv2.IHttpStage;
  /** Physical name of the person deletion queue. */
  deletionQueue: string;
  deadLetterQueues: readonly DeadLetterQueue[];
}

const FIVE_MINUTES = Duration.minutes(5);

/**
 * Alarms (each to the stage's SNS topic) and the stage dashboard. What each alarm means and what to do
 * is in docs/operations.md, under the section its description names. It lives in a nested stack of its
 * own (AnalyticsStack), so functions and queues are watched by their physical names, which are fixed:
 * a token would become one more parameter of the nested stack for each of them.
 */
export class Monitoring extends Construct {
  readonly topic: sns.Topic;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];
  private readonly actions: SnsAction[];

  constructor(
    scope: Construct,
    id: string,
    private readonly props: MonitoringProps,
  ) {
    super(scope, id);
    const { stage, prefix } = props;

    this.topic = new sns.Topic(this, 'AlarmTopic', {
      topicName: `${prefix}-alarms`,
      displayName: `${prefix} alarms`,
      enforceSSL: true,
    });
    if (stage.alarmEmail) this.topic.addSubscription(new subscriptions.EmailSubscription(stage.alarmEmail));
    const topics: sns.ITopic[] = [this.topic];
    if (stage.alarmTopicArn) topics.push(sns.Topic.fromTopicArn(this, 'ExternalAlarmTopic', stage.alarmTopicArn));
    this.actions = topics.map((t) => new SnsAction(t));

    this.functionAlarms();
    this.apiAlarms();
    this.ingestAlarms();
    this.queueAlarms();
    this.exportAlarms();
    this.drainAlarms();
    this.dashboard = this.buildDashboard();
  }

  private alarm(
    id: string,
    slug: string,
    runbook: string,
    what: string,
    props: Omit<cloudwatch.AlarmProps, 'alarmName' | 'alarmDescription'>,
    okAction = true,
  ) {
    const alarm = new cloudwatch.Alarm(this, id, {
      ...props,
      alarmName: `${this.props.prefix}-${slug}`,
      alarmDescription: `${what} Runbook: ${RUNBOOK_DOC}#${runbook}`,
    });
    for (const action of this.actions) {
      alarm.addAlarmAction(action);
      if (okAction) alarm.addOkAction(action);
    }
    this.alarms.push(alarm);
    return alarm;
  }

  /** Errors and throttles of every function. Workers alarm on their first error: nobody retries them by hand. */
  private functionAlarms() {
    const { apiFunctions, workerFunctions, stage } = this.props;
    for (const [kind, fns] of [
      ['api', apiFunctions],
      ['worker', workerFunctions],
    ] as const) {
      for (const [name, fn] of fns) {
        const threshold = kind === 'worker' ? 1 : stage.alarms.functionErrors;
        this.alarm(
          `${pascal(name)}Errors`,
          `${name}-errors`,
          RUNBOOK.functionErrors,
          `Function ${name} failed ${threshold} or more times in 5 minutes (unhandled errors, timeouts, out of memory). Check its log group for level ERROR, fix or roll back.`,
          {
            metric: lambdaMetric(fn, 'Errors', { period: FIVE_MINUTES, statistic: SUM }),
            threshold,
            comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
          },
        );
        this.alarm(
          `${pascal(name)}Throttles`,
          `${name}-throttles`,
          RUNBOOK.functionThrottles,
          `Lambda refused to run ${name} (concurrency exhausted) in the last 5 minutes. Check account concurrency and traffic; raise the limit or find the runaway caller.`,
          {
            metric: lambdaMetric(fn, 'Throttles', { period: FIVE_MINUTES, statistic: SUM }),
            threshold: 1,
            comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
          },
        );
      }
    }
  }

  /** API Gateway's own view of the stage: what clients get, including failures that never reach a function. */
  private apiAlarms() {
    const { apiStage, stage } = this.props;
    const { apiServerErrorRatePercent, apiServerErrorMinRequests, apiLatencyP99Ms } = stage.alarms;
    this.alarm(
      'Api5xxRate',
      'api-5xx-rate',
      RUNBOOK.api5xxRate,
      `More than ${apiServerErrorRatePercent}% of API requests answered 5xx in 2 of the last 3 five-minute periods (judged from ${apiServerErrorMinRequests} requests per period). Find the failing operation on the dashboard, check its logs, roll back if a deploy caused it.`,
      {
        metric: new cloudwatch.MathExpression({
          expression: `IF(requests >= ${apiServerErrorMinRequests}, 100 * FILL(errors, 0) / requests, 0)`,
          usingMetrics: {
            errors: apiStage.metricServerError({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.SUM }),
            requests: apiStage.metricCount({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.SUM }),
          },
          label: '5xx %',
          period: FIVE_MINUTES,
        }),
        threshold: apiServerErrorRatePercent,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      },
    );
    this.alarm(
      'ApiLatencyP99',
      'api-latency-p99',
      RUNBOOK.apiLatency,
      `API p99 latency above ${apiLatencyP99Ms} ms in 2 of the last 3 five-minute periods. Find the slow operation (RequestLatency by operation), check DynamoDB throttling and cold starts.`,
      {
        metric: apiStage.metricLatency({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.percentile(99) }),
        threshold: apiLatencyP99Ms,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      },
    );
  }

  private ingestAlarms() {
    const { ingestWorker, stage } = this.props;
    const ms = stage.alarms.ingestIteratorAgeMs;
    this.alarm(
      'IngestIteratorAge',
      'ingest-iterator-age',
      RUNBOOK.ingestIteratorAge,
      `The ingest worker is ${Math.round(ms / 1000)} s or more behind the table stream (10 minutes running): persons and trend rollups are stale. Check ingest_events errors and duration; records older than 24 h are dropped to the ingest failures queue.`,
      {
        metric: lambdaMetric(ingestWorker, 'IteratorAge', {
          period: FIVE_MINUTES,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold: ms,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      },
    );
  }

  /** Any message in a dead-letter queue (or the ingest failure destination) is work that was given up on. */
  private queueAlarms() {
    const { deadLetterQueues, deletionQueue } = this.props;
    for (const dlq of deadLetterQueues) {
      const runbook = dlq.name === 'ingest-failures' ? RUNBOOK.ingestFailures : RUNBOOK.deadLetterQueue;
      this.alarm(
        `${pascal(dlq.name)}DlqAlarm`,
        `${dlq.name}-dlq-depth`,
        runbook,
        `${dlq.meaning} Inspect the messages, fix the cause, then replay or redrive.`,
        {
          metric: queueMetric(dlq.queueName, 'ApproximateNumberOfMessagesVisible', {
            period: dlq.period ?? FIVE_MINUTES,
          }),
          threshold: 0,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        },
      );
    }
    // Sticky backstop for the weekly drain: stays in ALARM until the old requests are handled.
    this.alarm(
      'DeletionRequestOverdue',
      'deletion-request-overdue',
      RUNBOOK.deletionOverdue,
      `A person-event deletion request has waited more than ${DELETION_OVERDUE_SECONDS / 3600} h: a Sunday drain passed without handling it, and SQS drops it after 14 days. Run the drain now (see runbook) and find out why the last one did not finish.`,
      {
        metric: queueMetric(deletionQueue, 'ApproximateAgeOfOldestMessage', { period: FIVE_MINUTES }),
        threshold: DELETION_OVERDUE_SECONDS,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      },
    );
  }

  private exportAlarms() {
    this.alarm(
      'BatchExportFailures',
      'batch-export-failures',
      RUNBOOK.exportFailures,
      'At least one batch export run failed in the last 15 minutes (ExportRunFailures). Read the run and its logs (GET .../batch_exports/:id/logs); destination credentials or bucket policy are the usual cause.',
      {
        metric: this.custom(CUSTOM_METRICS.exportRunFailures, cloudwatch.Stats.SUM, Duration.minutes(15)),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      },
    );
  }

  /**
   * The weekly drain (cron(0 5 ? * SUN *)) must report DrainCompleted ≥ 1 (the deletion queue is
   * empty) by Sunday 08:00 UTC. Hourly datapoints: 1 for a Sunday 05:00, 06:00 or 07:00 UTC hour
   * without a completion, 0 for every other hour (FILL turns "no datapoint" into 0, so the series is
   * dense and a drain that never ran counts as not completed). ALARM when all three of those hours
   * are 1, i.e. no completion between 05:00 and 08:00; the alarm returns to OK by itself an hour or
   * so later (the window moves past the check), so it sends no OK notification: recovery is a
   * DrainCompleted datapoint, or the deletion-request-overdue alarm clearing. A drain that throws is
   * reported at once by its errors alarm.
   */
  private drainAlarms() {
    this.alarm(
      'DrainNotCompleted',
      'drain-not-completed',
      RUNBOOK.drainNotCompleted,
      'The Sunday person-event drain (05:00 UTC) did not report DrainCompleted by 08:00 UTC: deletion requests are still queued. Check drain_person_deletions logs and the deletion queue depth; run the drain again (see runbook).',
      {
        metric: new cloudwatch.MathExpression({
          expression: 'IF(DAY(done) == 7 AND HOUR(done) >= 5 AND HOUR(done) <= 7 AND done < 1, 1, 0)',
          usingMetrics: {
            done: new cloudwatch.MathExpression({
              expression: 'FILL(completed, 0)',
              usingMetrics: {
                completed: this.custom(CUSTOM_METRICS.drainCompleted, cloudwatch.Stats.SUM, Duration.hours(1)),
              },
              period: Duration.hours(1),
            }),
          },
          label: 'Sunday drain hours without completion',
          period: Duration.hours(1),
        }),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      },
      false,
    );
  }

  /** A custom metric of this stage with exactly the `service` dimension. */
  private custom(metricName: string, statistic: string, period: Duration) {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName,
      dimensionsMap: { service: this.props.serviceName },
      statistic,
      period,
    });
  }

  /** Every series of a custom metric of this stage, whatever its other dimensions (one line per operation, outcome...). */
  private search(metricName: string, statistic: string, label: string, period = FIVE_MINUTES) {
    const query = `Namespace="${METRICS_NAMESPACE}" MetricName="${metricName}" service="${this.props.serviceName}"`;
    return new cloudwatch.MathExpression({
      expression: `SEARCH('${query}', '${statistic}', ${period.toSeconds()})`,
      usingMetrics: {},
      label,
      period,
    });
  }

  private buildDashboard() {
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: this.props.prefix,
      defaultInterval: Duration.hours(24),
    });
    const rows = [
      this.titleRow(),
      this.apiGatewayRow(),
      this.operationsRow(),
      this.ingestionRow(),
      this.queuesRow(),
      this.exportsRow(),
      this.lambdaRow(),
      [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 8 })],
    ];
    for (const row of rows) dashboard.addWidgets(...row);
    return dashboard;
  }

  private titleRow(): cloudwatch.IWidget[] {
    return [
      new cloudwatch.TextWidget({
        markdown: `# ${this.props.prefix}\nAPI traffic, errors and latency (API Gateway), capture and ingestion, queues, batch exports and the weekly drain. Runbook: \`${RUNBOOK_DOC}\`.`,
        width: 24,
        height: 2,
      }),
    ];
  }

  private apiGatewayRow(): cloudwatch.IWidget[] {
    const { apiStage } = this.props;
    return [
      graph('API requests', [apiStage.metricCount({ statistic: SUM, label: 'requests' })]),
      graph('API 4xx / 5xx', [
        apiStage.metricClientError({ statistic: SUM, label: '4xx' }),
        apiStage.metricServerError({ statistic: SUM, label: '5xx' }),
      ]),
      graph('API latency (ms)', [
        apiStage.metricLatency({ statistic: cloudwatch.Stats.percentile(50), label: 'p50' }),
        apiStage.metricLatency({ statistic: cloudwatch.Stats.percentile(99), label: 'p99' }),
        apiStage.metricIntegrationLatency({ statistic: cloudwatch.Stats.percentile(99), label: 'integration p99' }),
      ]),
    ];
  }

  private operationsRow(): cloudwatch.IWidget[] {
    return [
      graph('Requests by operation', [this.search(CUSTOM_METRICS.requestCount, 'Sum', '')]),
      graph('Server / client errors by operation', [
        this.search(CUSTOM_METRICS.serverErrors, 'Sum', '5xx'),
        this.search(CUSTOM_METRICS.clientErrors, 'Sum', '4xx'),
      ]),
      graph('Latency p99 by operation (ms)', [this.search(CUSTOM_METRICS.requestLatency, 'p99', '')]),
    ];
  }

  private ingestionRow(): cloudwatch.IWidget[] {
    return [
      graph('Capture volume by outcome (events)', [this.search(CUSTOM_METRICS.captureEvents, 'Sum', '')], {
        stacked: true,
      }),
      graph('Ingestion lag (ms)', [
        this.search(CUSTOM_METRICS.ingestionLag, 'p50', 'lag p50'),
        this.search(CUSTOM_METRICS.ingestionLag, 'p99', 'lag p99'),
        lambdaMetric(this.props.ingestWorker, 'IteratorAge', {
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'stream iterator age (max)',
        }),
      ]),
      graph('Ingested events', [this.search(CUSTOM_METRICS.ingestedEvents, 'Sum', '')]),
    ];
  }

  private queuesRow(): cloudwatch.IWidget[] {
    const { deletionQueue, deadLetterQueues } = this.props;
    return [
      graph(
        'Deletion queue',
        [queueMetric(deletionQueue, 'ApproximateNumberOfMessagesVisible', { label: 'waiting requests' })],
        { right: [queueMetric(deletionQueue, 'ApproximateAgeOfOldestMessage', { label: 'oldest (s)' })] },
      ),
      graph(
        'Dead-letter queues (messages)',
        deadLetterQueues.map((d) => queueMetric(d.queueName, 'ApproximateNumberOfMessagesVisible', { label: d.name })),
      ),
      graph(
        'Weekly drain',
        [
          this.search(CUSTOM_METRICS.drainCompleted, 'Sum', 'completed'),
          this.search(CUSTOM_METRICS.personEventsDeleted, 'Sum', 'events deleted'),
        ],
        { period: Duration.hours(1) },
      ),
    ];
  }

  private exportsRow(): cloudwatch.IWidget[] {
    return [
      graph('Batch export runs', [
        this.search(CUSTOM_METRICS.exportRunsCompleted, 'Sum', 'completed'),
        this.search(CUSTOM_METRICS.exportRunFailures, 'Sum', 'failed'),
      ]),
      graph('Batch export rows', [this.search(CUSTOM_METRICS.exportRows, 'Sum', '')]),
      graph('Throttling', [this.search(CUSTOM_METRICS.throttled, 'Sum', 'API 429 (per key)')], {
        right: this.allFunctions().map(([name, fn]) =>
          lambdaMetric(fn, 'Throttles', { statistic: SUM, label: `Lambda ${name}` }),
        ),
      }),
    ];
  }

  private lambdaRow(): cloudwatch.IWidget[] {
    const allFunctions = this.allFunctions();
    return [
      graph(
        'Lambda errors by function',
        allFunctions.map(([name, fn]) => lambdaMetric(fn, 'Errors', { statistic: SUM, label: name })),
        { width: 12 },
      ),
      graph(
        'Lambda duration p99 by function (ms)',
        allFunctions.map(([name, fn]) =>
          lambdaMetric(fn, 'Duration', { statistic: cloudwatch.Stats.percentile(99), label: name }),
        ),
        { width: 12 },
      ),
    ];
  }

  private allFunctions() {
    return [...this.props.apiFunctions, ...this.props.workerFunctions];
  }
}

const SUM = cloudwatch.Stats.SUM;

/** A metric of a function, by its physical name (what `fn.metricErrors()` and the like read). */
function lambdaMetric(functionName: string, metricName: string, options: cloudwatch.MetricOptions) {
  return new cloudwatch.Metric({
    namespace: 'AWS/Lambda',
    metricName,
    dimensionsMap: { FunctionName: functionName },
    ...options,
  });
}

/** A metric of a queue, by its physical name; Maximum unless told, as `queue.metricApproximate…()`. */
function queueMetric(queueName: string, metricName: string, options: cloudwatch.MetricOptions) {
  return new cloudwatch.Metric({
    namespace: 'AWS/SQS',
    metricName,
    dimensionsMap: { QueueName: queueName },
    statistic: cloudwatch.Stats.MAXIMUM,
    ...options,
  });
}

/** A dashboard graph: a third of a row, six high, five-minute points unless `extra` says otherwise. */
function graph(title: string, left: cloudwatch.IMetric[], extra: Partial<cloudwatch.GraphWidgetProps> = {}) {
  return new cloudwatch.GraphWidget({ title, left, width: 8, height: 6, period: FIVE_MINUTES, ...extra });
}

/** `organizations_list` -> `OrganizationsList`: stable, readable construct ids. */
export function pascal(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
