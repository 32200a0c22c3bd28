import { apiHandler } from '#shared/http/handler.ts';
import { computeProjectTrend } from '#shared/domain/trends.ts';
import { trendPostBody, trendPostQuery } from '#shared/schemas/trends.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('insights_trend'),
  { query: trendPostQuery, body: trendPostBody },
  async ({ query, body, membership, projectId, deadline }) => {
    const refresh = query.refresh === 'true' || query.refresh === '1' || body.refresh === true;
    const answer = await computeProjectTrend(membership, projectId, body, refresh, deadline);
    return {
      status: 200,
      body: answer.body,
      csv: answer.csv,
      headers: { 'X-Trend-Source': answer.source, 'Server-Timing': answer.timing },
    };
  },
);
