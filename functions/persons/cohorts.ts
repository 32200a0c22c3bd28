import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cohortsOfPerson } from '#shared/domain/cohorts.ts';
import { personCohortsQuery } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('persons_cohorts'),
  { query: personCohortsQuery },
  async ({ query, projectId }) => ok({ results: await cohortsOfPerson(projectId, query.person_id) }),
);
