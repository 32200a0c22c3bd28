import { apiHandler } from '#shared/http/handler.ts';
import { accepted, ok } from '#shared/http/responses.ts';
import { runQuery } from '#shared/domain/query/index.ts';
import { queryBody } from '#shared/schemas/query/index.ts';
import { route } from '../routes.ts';

/** 202 while the answer is still being computed (`query_status.complete` false), as PostHog answers. */
export const handler = apiHandler(
  route('query_create'),
  { body: queryBody },
  async ({ body, caller, membership, projectId, deadline }) => {
    const answer = await runQuery({ membership, projectId, deadline }, body, caller);
    const pending = (answer.query_status as { complete?: boolean } | null | undefined)?.complete === false;
    return pending ? accepted(answer) : ok(answer);
  },
);
