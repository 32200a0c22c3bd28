import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_LAKE_ROUTING_EVENTS, readConfig } from '#shared/config.ts';

describe('which engine reads the lake for trends, and from how many events', () => {
  it('DuckDB in the local runtime, Athena where CDK names its workgroup and database, nothing else', () => {
    expect(readConfig({ ANALYTICS_RUNTIME: 'local' }).lakeEngine).toEqual({ kind: 'duckdb' });
    expect(
      readConfig({
        AWS_LAMBDA_FUNCTION_NAME: 'f',
        LAKE_BUCKET: 'lake',
        LAKE_ATHENA_WORKGROUP: 'analytics-dev-lake',
        LAKE_GLUE_DATABASE: 'analytics_dev_lake',
        LAKE_QUERY_ROLE_ARN: 'arn:aws:iam::123456789012:role/lake-query',
        AWS_REGION: 'eu-west-1',
      }).lakeEngine,
    ).toEqual({
      kind: 'athena',
      workgroup: 'analytics-dev-lake',
      database: 'analytics_dev_lake',
      region: 'eu-west-1',
      bucket: 'lake',
      queryRole: 'arn:aws:iam::123456789012:role/lake-query',
    });
    // Without the role to scope each project's session, no Athena: never the function's own identity.
    expect(
      readConfig({
        AWS_LAMBDA_FUNCTION_NAME: 'f',
        LAKE_BUCKET: 'lake',
        LAKE_ATHENA_WORKGROUP: 'analytics-dev-lake',
        LAKE_GLUE_DATABASE: 'analytics_dev_lake',
      }).lakeEngine,
    ).toBeUndefined();
    // The compactor has the bucket but no workgroup: it writes the lake, it does not query it.
    expect(readConfig({ AWS_LAMBDA_FUNCTION_NAME: 'f', LAKE_BUCKET: 'lake' }).lakeEngine).toBeUndefined();
    expect(readConfig({ AWS_LAMBDA_FUNCTION_NAME: 'f' }).lakeEngine).toBeUndefined();
  });

  it('routes above 20M events by default; ANALYTICS_LAKE_ROUTING_EVENTS lowers it, garbage is refused', () => {
    expect(readConfig({}).lakeRoutingEvents).toBe(DEFAULT_LAKE_ROUTING_EVENTS);
    expect(DEFAULT_LAKE_ROUTING_EVENTS).toBe(20_000_000);
    expect(readConfig({ ANALYTICS_LAKE_ROUTING_EVENTS: '5' }).lakeRoutingEvents).toBe(5);
    expect(() => readConfig({ ANALYTICS_LAKE_ROUTING_EVENTS: 'many' })).toThrow(ConfigError);
  });
});
