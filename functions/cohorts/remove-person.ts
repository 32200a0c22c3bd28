import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { removePersonFromStaticCohort } from '#shared/domain/cohorts.ts';
import { cohortIdParams, removePersonBody } from '#shared/schemas/cohorts.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('cohorts_remove_person_from_static_cohort'),
  { params: cohortIdParams, body: removePersonBody },
  async ({ params, body, projectId }) => ok(await removePersonFromStaticCohort(projectId, params.id, body.person_id)),
);
