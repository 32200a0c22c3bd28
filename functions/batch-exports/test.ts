import { apiHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { testDestination } from '#shared/domain/destination-test.ts';
import { destinationTestBody } from '#shared/schemas/batch-exports.ts';
import { route } from '../routes.ts';

/** 200 with each step's Passed / Failed / Skipped: a failing destination is an answer, not an error. */
export const handler = apiHandler(
  route('batch_exports_test'),
  { body: destinationTestBody },
  async ({ body, membership }) => ok(await testDestination(membership, body)),
);
