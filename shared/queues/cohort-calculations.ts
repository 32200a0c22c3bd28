import { SendMessageCommand, sqs } from '../aws/sqs.ts';
import { ConfigError, requireQueueUrl } from '../config.ts';
import { ServiceUnavailable } from '../errors.ts';

/** One step of a cohort's recalculation for the calculate_cohorts worker; where it stands is on the cohort item. */
export interface QueuedCohortCalculation {
  project_id: number;
  cohort_id: number;
  /** The calculation it continues: a message of a calculation since replaced is dropped. */
  calculation_id: string;
}

export async function queueCohortCalculation(message: QueuedCohortCalculation): Promise<void> {
  try {
    await sqs().send(
      new SendMessageCommand({
        QueueUrl: requireQueueUrl('cohort_calculations'),
        MessageBody: JSON.stringify(message),
      }),
    );
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ServiceUnavailable('Could not start the cohort calculation; please retry.');
  }
}
