import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { updateCohort } from '#shared/domain/cohorts.ts';
import { queueCohortCalculation } from '#shared/queues/cohort-calculations.ts';
import { cohortIdParams, cohortUpdateBody } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_partial_update'),
  { params: cohortIdParams, body: cohortUpdateBody },
  async ({ params, body, projectId }) => ok(await updateCohort(projectId, params.id, body, queueCohortCalculation)),
);
