import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { runQuery } from '#shared/domain/query/index.ts';
import { queryBody } from '#shared/schemas/query/index.ts';
import { route } from '../routes.ts';

export const handler = apiHandler(
  route('query_create'),
  { body: queryBody },
  async ({ body, membership, projectId, deadline }) => ok(await runQuery({ membership, projectId, deadline }, body)),
);
