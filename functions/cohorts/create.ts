import { apiHandler } from '#shared/http/handler.ts';
import { created } from '#shared/http/responses.ts';
import { createCohort } from '#shared/domain/cohorts.ts';
import { queueCohortCalculation } from '#shared/queues/cohort-calculations.ts';
import { cohortCreateBody } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_create'),
  { body: cohortCreateBody },
  async ({ body, caller, projectId }) => created(await createCohort(caller, projectId, body, queueCohortCalculation)),
);
