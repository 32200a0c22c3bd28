import { Duration } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { QUEUES, type QueueName, type QueueSettings } from '#shared/queue-settings.ts';
import { TABLE_SCHEMA } from '#shared/db/table-schema.ts';
import { pascal } from '#infra/constructs/monitoring.ts';
import { resourcePrefix, type StageSettings } from '#infra/stages.ts';

/** `person_deletions` -> `analytics-<stage>-person-deletions`. */
const queueNameOf = (stage: StageSettings, name: string) => `${resourcePrefix(stage)}-${name.replaceAll('_', '-')}`;

/**
 * Construct id of the stateful resources under their stack. CDK leaves a `Default` id out of logical
 * ids and of the unique ids other constructs derive from (event source mappings name themselves after
 * their table or queue): the table, queues, key and bucket keep the ids they had when the stack made
 * them directly, so an existing stage updates them in place, never replaces them.
 */
export const STATEFUL_ID = 'Default';

/** Every queue: TLS only, SQS-managed encryption. */
const ENCRYPTED_IN_TRANSIT_AND_AT_REST = { enforceSSL: true, encryption: sqs.QueueEncryption.SQS_MANAGED } as const;

/**
 * What holds data: the table, the queues of shared/queue-settings.ts with their DLQs, the ingest
 * worker's failure queue, the export secrets key and the CloudFront log bucket. Removal and recovery
 * follow the stage; everything else of the stack can be replaced without losing anything.
 */
export class StatefulResources extends Construct {
  readonly table: dynamodb.Table;
  /** The queues of shared/queue-settings.ts with their DLQs. */
  readonly queues = new Map<QueueName, { queue: sqs.Queue; dlq: sqs.Queue }>();
  /** On-failure destination of the ingest worker's stream mapping. */
  readonly ingestFailures: sqs.Queue;
  /** Wraps the data keys that seal batch-export destination secrets (shared/exports/secrets.ts). */
  readonly exportSecretsKey: kms.Key;
  /** CloudFront standard logs, when the stage keeps them. */
  readonly edgeLogBucket?: s3.Bucket;

  constructor(scope: Construct, stage: StageSettings) {
    super(scope, STATEFUL_ID);
    const prefix = resourcePrefix(stage);
    this.table = this.createTable(stage, prefix);
    this.addQueues(stage);
    this.ingestFailures = new sqs.Queue(this, 'IngestFailures', {
      queueName: `${prefix}-ingest-failures`,
      retentionPeriod: Duration.days(14),
      ...ENCRYPTED_IN_TRANSIT_AND_AT_REST,
    });

    this.exportSecretsKey = new kms.Key(this, 'ExportSecretsKey', {
      description: `${prefix}: wraps the per-export data keys that seal batch-export destination secrets`,
      enableKeyRotation: true,
      // Same fate as the table whose sealed secrets it opens.
      removalPolicy: stage.removalPolicy,
    });

    if (stage.cloudFrontAccessLogs) {
      // CloudFront standard logs need ACLs on the bucket (object writer). Kept for the stage's log retention.
      this.edgeLogBucket = new s3.Bucket(this, 'EdgeLogs', {
        encryption: s3.BucketEncryption.S3_MANAGED,
        blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
        enforceSSL: true,
        objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
        lifecycleRules: [{ expiration: Duration.days(stage.logRetention) }],
        removalPolicy: stage.removalPolicy,
      });
    }
  }

  /** The single table of shared/db/schema.ts, with its stream and global secondary indexes. */
  private createTable(stage: StageSettings, prefix: string): dynamodb.Table {
    const { indexes, ...keys } = TABLE_SCHEMA;
    const table = new dynamodb.Table(this, 'Table', {
      tableName: prefix,
      partitionKey: { name: keys.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: keys.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: keys.ttlAttribute,
      // The ingest worker (persons, rollups) is fed by this stream (DESIGN §1).
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: stage.pointInTimeRecovery },
      deletionProtection: stage.deletionProtection,
      removalPolicy: stage.removalPolicy,
    });
    for (const index of Object.values(indexes)) {
      table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType[index.projection],
      });
    }
    return table;
  }

  /** Every queue of shared/queue-settings.ts, each with a DLQ after maxReceiveCount (alarms: Monitoring). */
  private addQueues(stage: StageSettings): void {
    for (const [name, settings] of Object.entries(QUEUES) as [QueueName, QueueSettings][]) {
      const dlq = new sqs.Queue(this, `${pascal(name)}Dlq`, {
        queueName: `${queueNameOf(stage, name)}-dlq`,
        retentionPeriod: Duration.days(14),
        ...ENCRYPTED_IN_TRANSIT_AND_AT_REST,
      });
      const queue = new sqs.Queue(this, `${pascal(name)}Queue`, {
        queueName: queueNameOf(stage, name),
        retentionPeriod: Duration.days(settings.retentionDays),
        visibilityTimeout: Duration.seconds(settings.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: dlq, maxReceiveCount: settings.maxReceiveCount },
        ...ENCRYPTED_IN_TRANSIT_AND_AT_REST,
      });
      this.queues.set(name, { queue, dlq });
    }
  }

  queue(name: QueueName): sqs.Queue {
    return this.queues.get(name)!.queue;
  }
}
