import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { addPersonsToStaticCohort } from '#shared/domain/cohorts.ts';
import { addPersonsBody, cohortIdParams } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_add_persons_to_static_cohort'),
  { params: cohortIdParams, body: addPersonsBody },
  async ({ params, body, projectId }) => ok(await addPersonsToStaticCohort(projectId, params.id, body.person_ids)),
);
