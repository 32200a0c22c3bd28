import { apiHandler } from '#shared/http/handler.ts';
import { computeProjectTrend } from '#shared/domain/trends.ts';
import { trendGetQuery } from '#shared/schemas/trends.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('insights_trend_retrieve'),
  { query: trendGetQuery },
  async ({ query, membership, projectId, deadline }) => {
    const answer = await computeProjectTrend(membership, projectId, query.trend, query.refresh, deadline);
    return {
      status: 200,
      body: answer.body,
      csv: answer.csv,
      headers: { 'X-Trend-Source': answer.source, 'Server-Timing': answer.timing },
    };
  },
);
