import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { propertiesTimeline } from '#shared/domain/persons.ts';
import { personIdParams, timelineQuery } from '#shared/schemas/persons.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_properties_timeline'),
  { params: personIdParams, query: timelineQuery },
  async ({ params, query, projectId }) => ok(await propertiesTimeline(projectId, params.id, query)),
);
