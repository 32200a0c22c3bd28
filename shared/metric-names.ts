/** The service's CloudWatch metrics: emitted by shared/observability.ts, alarmed on and graphed by infra. Pure constants. */
export const METRICS_NAMESPACE = 'Analytics';

export const METRIC = {
  requestCount: 'RequestCount',
  requestLatency: 'RequestLatency',
  serverErrors: 'ServerErrors',
  clientErrors: 'ClientErrors',
  throttled: 'Throttled',
  captureEvents: 'CaptureEvents',
  ingestionLag: 'IngestionLag',
  ingestedEvents: 'IngestedEvents',
  exportRows: 'ExportRows',
  exportRunFailures: 'ExportRunFailures',
  exportRunsCompleted: 'ExportRunsCompleted',
  personEventsDeleted: 'PersonEventsDeleted',
  drainCompleted: 'DrainCompleted',
} as const;
