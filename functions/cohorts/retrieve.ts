import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { cohortResponse, findCohort } from '#shared/domain/cohorts.ts';
import { cohortIdParams } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_retrieve'),
  { params: cohortIdParams },
  async ({ params, projectId }) => ok(cohortResponse(await findCohort(projectId, params.id))),
);
