import { METRICS_NAMESPACE } from './metric-names.ts';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { MiddlewareObj } from '@middy/core';

const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? 'analytics';

/** One structured JSON logger per process. Request-scoped keys are appended by the handler factory. */
export const logger = new Logger({ serviceName });

// EMF lines only mean something in Lambda, where CloudWatch Logs turns them into metrics. The local
// runtime (npm start, the tests) leaves them out unless POWERTOOLS_METRICS_DISABLED=false asks for them.
if (process.env.ANALYTICS_RUNTIME === 'local' && !process.env.AWS_LAMBDA_FUNCTION_NAME)
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const truthy = (value: string | undefined) => ['1', 'true', 'yes', 'on'].includes((value ?? '').trim().toLowerCase());
/** Powertools' own rule: POWERTOOLS_METRICS_DISABLED when set, else POWERTOOLS_DEV. */
const metricsOff =
  process.env.POWERTOOLS_METRICS_DISABLED !== undefined
    ? truthy(process.env.POWERTOOLS_METRICS_DISABLED)
    : truthy(process.env.POWERTOOLS_DEV);

// X-Ray only exists in Lambda (AWS_EXECUTION_ENV set, a daemon listening): Powertools' tracer switches
// itself off elsewhere; the local runtime and the tests also say so, as they do for metrics.
if (process.env.ANALYTICS_RUNTIME === 'local' && !process.env.AWS_LAMBDA_FUNCTION_NAME)
  process.env.POWERTOOLS_TRACE_ENABLED ??= 'false';

/**
 * X-Ray tracing (functions run with active tracing, infra/constructs/service-function.ts): every AWS
 * client is wrapped (shared/aws/options.ts, one subsegment per call), and the factories
 * (shared/http/handler.ts, shared/workers/handler.ts) open the handler's subsegment and annotate it
 * with the route or worker name. A no-op where tracing is off.
 */
export const tracer = new Tracer({ serviceName });

/**
 * The factories' first middleware: the invocation's `## index.handler` subsegment (annotated ColdStart
 * and Service by Powertools, and `route` with the route's operationId or the worker's name here),
 * under which every AWS call of the invocation is a subsegment of its own. Responses are not recorded
 * (they hold customers' data); errors are. A no-op where tracing is off.
 */
export function tracedHandler(route: string): MiddlewareObj {
  const segment = captureLambdaHandler(tracer, { captureResponse: false });
  return {
    ...segment,
    before: async (request) => {
      await segment.before?.(request);
      tracer.putAnnotation('route', route);
    },
  };
}

/**
 * CloudWatch metrics (EMF) in namespace `Analytics`, dimension `service` on all of them. The factories
 * (shared/http/handler.ts, shared/workers/handler.ts) flush them once per invocation with `logMetrics`.
 * The names are what the alarms and the dashboard (infra/) read: change both together.
 * Dimensions and metadata never carry keys, tokens or other secrets. Warnings (for instance "no
 * metrics to publish") go through the logger.
 */
export const metrics = new Metrics({
  namespace: METRICS_NAMESPACE,
  serviceName,
  // Its own warnings go to the structured log, except while metrics are off (locally), when they would
  // only be noise ("no metrics to publish", a dimension re-added by concurrent local requests).
  logger: {
    debug: (message: string) => logger.debug(message),
    info: (message: string) => logger.info(message),
    warn: (message: string) => {
      if (!metricsOff) logger.warn(message);
    },
    error: (message: string) => logger.error(message),
  },
});

export { MetricUnit };
export type MetricUnitValue = (typeof MetricUnit)[keyof typeof MetricUnit];

export { METRIC } from './metric-names.ts';

/**
 * A metric with its own dimensions (for instance one per capture outcome): emitted at once as its own
 * EMF line, since one EMF line has one set of dimension values for all its metrics.
 */
export function emitWithDimensions(
  name: string,
  unit: MetricUnitValue,
  value: number,
  dimensions: Record<string, string>,
): void {
  const single = metrics.singleMetric();
  for (const [k, v] of Object.entries(dimensions)) single.addDimension(k, v);
  single.addMetric(name, unit, value);
}
