import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { duplicateAsStatic } from '#shared/domain/cohorts.ts';
import { queueCohortCalculation } from '#shared/queues/cohort-calculations.ts';
import { cohortIdParams } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_duplicate_as_static_cohort'),
  { params: cohortIdParams },
  async ({ params, caller, projectId }) =>
    ok(await duplicateAsStatic(caller, projectId, params.id, queueCohortCalculation)),
);
