import { RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';

/** Everything that differs between deployed stages; the stack reads nothing else from the stage name. */
export interface StageSettings {
  /** Part of the stack name (`analytics-<name>`), so several stages can live in one account and region. */
  name: string;
  /** Applied to the table and the log groups. */
  removalPolicy: RemovalPolicy;
  pointInTimeRecovery: boolean;
  deletionProtection: boolean;
  logRetention: RetentionDays;
  lambdaMemoryMb: number;
}

const PROD: Omit<StageSettings, 'name'> = {
  // Customer data: survive a stack deletion, a mistaken `cdk destroy` and a bad write.
  removalPolicy: RemovalPolicy.RETAIN,
  pointInTimeRecovery: true,
  deletionProtection: true,
  logRetention: RetentionDays.THREE_MONTHS,
  lambdaMemoryMb: 1024,
};

// dev, feature stacks, any other name: cheap and fully removable by `cdk destroy`.
const NON_PROD: Omit<StageSettings, 'name'> = {
  removalPolicy: RemovalPolicy.DESTROY,
  pointInTimeRecovery: false,
  deletionProtection: false,
  logRetention: RetentionDays.ONE_WEEK,
  lambdaMemoryMb: 512,
};

// The stage name ends up in the stack name and in generated resource names.
const STAGE_NAME = /^[a-z][a-z0-9-]{0,19}$/;

export function stageSettings(name: string): StageSettings {
  if (!STAGE_NAME.test(name)) {
    throw new Error(`stage must match ${STAGE_NAME} (lowercase letters, digits, '-'), got '${name}'`);
  }
  return { name, ...(name === 'prod' ? PROD : NON_PROD) };
}
