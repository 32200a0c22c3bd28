import { now as clockNow } from '../clock.ts';
import type { MembershipRecord } from '../db/organizations.ts';
import { DestinationError } from '../exports/destination-http.ts';
import { renderPrefix } from '../exports/files.ts';
import { headBucket, putObject, type S3Destination } from '../exports/s3.ts';
import { assumeRole } from '../exports/sts.ts';
import { logger } from '../observability.ts';
import { destination, type ExportInput } from './batch-exports.ts';

export type StepStatus = 'Passed' | 'Failed' | 'Skipped';
export interface StepResult {
  name: string;
  description: string;
  result: { status: StepStatus; message: string | null };
}

/** The object the check writes under the prefix: one key, so repeated checks replace it. */
export const TEST_OBJECT = 'posthog-batch-export-destination-test.txt';

const STEPS = [
  {
    name: 'Assume the role',
    description:
      'When the destination names a role, assume it with your organization id as ExternalId (skipped for access keys).',
  },
  {
    name: 'Check the bucket exists',
    description: 'Ask S3 whether the bucket exists and these credentials may use it (HeadBucket).',
  },
  {
    name: 'Write a test object',
    description: `Write a small object, ${TEST_OBJECT}, under the prefix, as a run writes its files.`,
  },
] as const;

/**
 * Our sentence for a failed step: what the failure means for the user, then the status and error
 * code our S3/STS client recorded (DestinationError's message, never the remote body).
 */
function failure(step: number, d: S3Destination, error: unknown): string {
  if (!(error instanceof DestinationError)) {
    logger.warn('destination test step failed unexpectedly', { step, error: String(error) });
    return 'The check stopped on an unexpected error on our side; try again.';
  }
  const status = (error as { status?: number }).status;
  const bucket = `'${d.bucket_name}'`;
  const why =
    step === 0
      ? 'We could not assume the role: check that its trust policy lets the exporter assume it with your organization id as ExternalId, and that the role exists.'
      : status === 404
        ? `Bucket ${bucket} does not exist, or these credentials may not see it.`
        : status === 403
          ? step === 1
            ? `Access to bucket ${bucket} was refused: check the credentials, the endpoint and the bucket's policy.`
            : `Writing to bucket ${bucket} was refused: the credentials need s3:PutObject under the prefix (and kms:GenerateDataKey with aws:kms encryption).`
          : step === 1
            ? `We could not reach bucket ${bucket}.`
            : `We could not write to bucket ${bucket}.`;
  return `${why} (${error.message})`;
}

/**
 * PostHog's destination test (run_test_step_new), all steps in one request: each step runs only when
 * the ones before it passed (the others are Skipped), and answers Passed or Failed in our own words.
 * The config is validated like a create's first (400 naming the field). With `step`, only that step's
 * result is answered, the steps before it having run (PostHog's shape for one step).
 */
export async function testDestination(
  membership: MembershipRecord,
  input: { destination: ExportInput['destination']; step?: number },
): Promise<{ steps: StepResult[] } | StepResult> {
  const dest = destination(input.destination);
  let target: S3Destination = { ...(dest.config as unknown as S3Destination), ...(dest.keys ?? {}) };
  const roleArn = typeof dest.config.role_arn === 'string' ? dest.config.role_arn : undefined;
  const results: StepResult[] = [];
  const last = input.step ?? STEPS.length - 1;
  let failed = false;
  const run = async (index: number, body: () => Promise<StepStatus>) => {
    let result: StepResult['result'];
    if (failed) result = { status: 'Skipped', message: 'Skipped: an earlier step failed.' };
    else {
      try {
        const status = await body();
        result = {
          status,
          message: status === 'Skipped' ? 'No role to assume: the destination uses access keys.' : null,
        };
      } catch (error) {
        failed = true;
        result = { status: 'Failed', message: failure(index, target, error) };
      }
    }
    results.push({ ...STEPS[index]!, result });
  };
  await run(0, async () => {
    if (!roleArn) return 'Skipped';
    const temporary = await assumeRole({
      roleArn,
      externalId: membership.organization_id,
      sessionName: 'batch-export-destination-test',
    });
    target = { ...target, ...temporary };
    return 'Passed';
  });
  if (last >= 1)
    await run(1, async () => {
      await headBucket(target);
      return 'Passed';
    });
  if (last >= 2)
    await run(2, async () => {
      const at = clockNow();
      const prefix = renderPrefix(String(dest.config.prefix ?? ''), { start: at, end: at }, 'events').replace(
        /\/+$/,
        '',
      );
      const body = Buffer.from(`Written by the batch export destination check at ${at.toISOString()}.\n`);
      await putObject(target, prefix ? `${prefix}/${TEST_OBJECT}` : TEST_OBJECT, body, 'text/plain');
      return 'Passed';
    });
  return input.step === undefined ? { steps: results } : results[input.step]!;
}
