import { Throttled } from '../../errors.ts';
import { logger, METRIC, metrics, MetricUnit } from '../../observability.ts';
import { errorResponse } from '../errors.ts';
import type { Middleware, PipelineRequest, PublicRouteInfo } from './pipeline.ts';

/**
 * The outermost of the pipeline's own middlewares. Before: the request's log keys and its start time.
 * After, success or error: the error becomes PostHog's error response (the one place, via
 * shared/http/errors.ts), the rate-limit headers go on whatever the response is, one log line, and the
 * request metrics (flushed by Powertools' `logMetrics`, outside this middleware): RequestCount,
 * RequestLatency, ServerErrors and ClientErrors (0 or 1 each, so their average is the error rate) and,
 * for a 429 of the rate limiter, Throttled; all with dimension `operation` = the operationId.
 */
export const completion = (route: PublicRouteInfo): Middleware => ({
  before: (request) => {
    request.internal.startedAt = performance.now();
    logger.appendKeys({
      operation_id: route.operationId,
      route: `${route.method} ${route.path}`,
      request_id: request.event.requestContext?.requestId,
    });
  },
  after: (request) => complete(route, request),
  onError: (request) => {
    request.response = errorResponse(request.error);
    complete(route, request);
  },
});

function complete(route: PublicRouteInfo, request: PipelineRequest): void {
  const { response, internal } = request;
  if (response && internal.rateLimitHeaders) response.headers = { ...response.headers, ...internal.rateLimitHeaders };
  const status = response?.statusCode ?? 500;
  // Only absent when a Powertools middleware outside this one failed before it started: counted as 0 ms.
  const elapsedMs = performance.now() - (internal.startedAt ?? performance.now());
  logger.info('request completed', { status: response?.statusCode, duration_ms: Math.round(elapsedMs * 10) / 10 });
  metrics.addDimension('operation', route.operationId);
  metrics.addMetric(METRIC.requestCount, MetricUnit.Count, 1);
  metrics.addMetric(METRIC.requestLatency, MetricUnit.Milliseconds, Math.round(elapsedMs * 100) / 100);
  metrics.addMetric(METRIC.serverErrors, MetricUnit.Count, status >= 500 ? 1 : 0);
  metrics.addMetric(METRIC.clientErrors, MetricUnit.Count, status >= 400 && status < 500 ? 1 : 0);
  if (request.error instanceof Throttled) metrics.addMetric(METRIC.throttled, MetricUnit.Count, 1);
}
