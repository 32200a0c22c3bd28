import { Duration, Names, NestedStack, Stack, Validations, type CfnElement, type RemovalPolicy } from 'aws-cdk-lib';
import * as athena from 'aws-cdk-lib/aws-athena';
import * as glue from 'aws-cdk-lib/aws-glue';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { routes, workers, type Route, type Worker } from '#functions/routes.ts';
import { ENV } from '#shared/config.ts';
import {
  ATHENA_QUERY_ACTIONS,
  BYTES_SCANNED_CUTOFF,
  EVENTS_PREFIX,
  GLUE_COLUMNS,
  GLUE_READ_ACTIONS,
  LAKE_TABLE,
  lakeDatabaseName,
  MANIFESTS_PREFIX,
  RESULT_OBJECT_ACTIONS,
  RESULTS_PREFIX,
} from '#shared/lake/athena.ts';

/** The lake query role's name: the functions build its ARN from it (it is not read across stacks). */
export const queryRoleName = (prefix: string) => `${prefix}-lake-query`;

export interface LakeProps {
  prefix: string;
  removalPolicy: RemovalPolicy;
  /** Function name -> Lambda: the workers whose row says `writesLake` are granted the lake; the rows saying `queriesLake` may assume its query role. */
  functions: ReadonlyMap<string, lambda.Function>;
}

/**
 * The Parquet lake (shared/lake/): a private bucket, a Glue table Athena reads through partition
 * projection (no partitions to manage: `project_id` is injected, so Athena itself refuses a query
 * without a project equality; `day` is a date range), and an Athena workgroup with a per-query
 * bytes-scanned cutoff. The table reads the pointer objects (Hive symlink manifests) of each day,
 * so a day rewritten by the compactor switches to its new files in one PutObject. A nested stack
 * of its own (as monitoring): the stage's stack is near CloudFormation's 500 resources.
 *
 * Queries run with the lake query role, never with a function's own identity: a query function may
 * only assume it, and does so per project with a session policy naming that project's prefixes
 * (shared/lake/athena.ts lakeSessionPolicy), so what Athena reads and writes for the session is
 * that project's objects whatever the SQL says (docs/reliability.md, "two walls").
 */
export class Lake extends NestedStack {
  readonly bucket: s3.Bucket;
  readonly database: glue.CfnDatabase;
  readonly table: glue.CfnTable;
  readonly workgroup: athena.CfnWorkGroup;
  /** What every lake query session is cut from (undefined in a stage where no function queries the lake). */
  readonly queryRole: iam.Role | undefined;

  constructor(scope: Construct, id: string, props: LakeProps) {
    super(scope, id, { description: `The events lake of ${props.prefix}: bucket, Glue table, Athena workgroup` });
    const { account } = this;
    this.bucket = new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy,
      lifecycleRules: [
        // A writer that died mid-upload leaves parts only multipart listings show: gone after a day.
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Query results are answers already delivered (and reused for an hour at most).
        { id: 'expire-query-results', prefix: RESULTS_PREFIX, expiration: Duration.days(7) },
        // Events are kept as the table keeps them (no expiry); colder storage after 90 days, reads stay instant.
        {
          id: 'events-infrequent-access',
          prefix: EVENTS_PREFIX,
          transitions: [{ storageClass: s3.StorageClass.INFREQUENT_ACCESS, transitionAfter: Duration.days(90) }],
        },
      ],
    });

    const databaseName = lakeDatabaseName(props.prefix);
    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: account,
      databaseInput: {
        name: databaseName,
        description: `${props.prefix}: the events lake (Parquet, one folder per project and day)`,
      },
    });
    const lakeUri = `s3://${this.bucket.bucketName}`;
    this.table = new glue.CfnTable(this, 'EventsTable', {
      catalogId: account,
      databaseName,
      tableInput: {
        name: LAKE_TABLE,
        tableType: 'EXTERNAL_TABLE',
        partitionKeys: [
          { name: 'project_id', type: 'bigint' },
          { name: 'day', type: 'string' },
        ],
        parameters: {
          classification: 'parquet',
          'projection.enabled': 'true',
          'projection.project_id.type': 'injected',
          'projection.day.type': 'date',
          'projection.day.format': 'yyyy-MM-dd',
          'projection.day.range': '2015-01-01,NOW+1DAYS',
          'projection.day.interval': '1',
          'projection.day.interval.unit': 'DAYS',
          // Each day's pointer: the symlink manifest that lists its current files.
          'storage.location.template': `${lakeUri}/${MANIFESTS_PREFIX}project_id=\${project_id}/day=\${day}/`,
        },
        storageDescriptor: {
          columns: GLUE_COLUMNS,
          location: `${lakeUri}/${MANIFESTS_PREFIX}`,
          inputFormat: 'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat',
          outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
          serdeInfo: { serializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' },
        },
      },
    });
    this.table.addResourceDependency(this.database);

    this.workgroup = new athena.CfnWorkGroup(this, 'Workgroup', {
      name: `${props.prefix}-lake`,
      description: `${props.prefix}: queries over the events lake`,
      state: 'ENABLED',
      recursiveDeleteOption: true,
      workGroupConfiguration: {
        bytesScannedCutoffPerQuery: BYTES_SCANNED_CUTOFF,
        // Each query names its project's results folder (athena-results/project_id=<p>/): an enforced
        // workgroup location would put every project's results under one prefix, which every session
        // would then need to read. The location is enforced by IAM instead: a session may write only
        // its project's folder, and there is no default location to fall back to.
        enforceWorkGroupConfiguration: false,
        publishCloudWatchMetricsEnabled: true,
        engineVersion: { selectedEngineVersion: 'Athena engine version 3' },
        resultConfiguration: {
          encryptionConfiguration: { encryptionOption: 'SSE_S3' },
          expectedBucketOwner: account,
        },
      },
    });

    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        "Server access logs would add a log bucket per stage for a bucket only the stack's own roles reach: the compactor (its prefixes, by grant) and Athena through the workgroup (CloudTrail and the workgroup's CloudWatch metrics record queries). It blocks public access, enforces SSL and is encrypted.",
    });
    for (const w of workers as readonly Worker[]) {
      const fn = w.writesLake ? props.functions.get(w.name) : undefined;
      if (fn) this.grantWrite(fn);
    }
    const readers = [
      ...(routes as readonly Route[]).filter((r) => r.queriesLake).map((r) => r.operationId),
      ...(workers as readonly Worker[]).filter((w) => w.queriesLake).map((w) => w.name),
    ].flatMap((name) => props.functions.get(name) ?? []);
    this.queryRole = readers.length ? this.lakeQueryRole(props.prefix, databaseName, readers) : undefined;
    for (const fn of readers) this.grantQuery(fn, databaseName, queryRoleName(props.prefix));
  }

  /**
   * The most any lake query session may do: Athena in this workgroup (start, poll, read, stop), the
   * Glue table it names, and what Athena reads and writes with the session's identity: the day
   * pointers and files (read only) and the query results (their own prefix). Each session's policy
   * narrows the prefixes to one project's. Only the query functions' roles may assume it.
   *
   * It lives in the stage's stack, named: its trust names the query functions' roles, whose nested
   * stacks read this one's outputs (the bucket's name), so a role here would close a cycle; the
   * functions build its ARN from its name (queryRoleArn) instead of reading it.
   */
  private lakeQueryRole(prefix: string, databaseName: string, readers: lambda.Function[]): iam.Role {
    const stack = Stack.of(this);
    const role = new iam.Role(this.nestedStackParent!, 'LakeQueryRole', {
      roleName: queryRoleName(prefix),
      description: `${prefix}: lake queries, one project a session (its session policy names the project's prefixes)`,
      assumedBy: new iam.CompositePrincipal(...readers.map((fn) => new iam.ArnPrincipal(fn.role!.roleArn))),
      // Sessions assumed by a role (role chaining) last an hour at most whatever this says.
      maxSessionDuration: Duration.hours(1),
    });
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ATHENA_QUERY_ACTIONS,
        resources: [stack.formatArn({ service: 'athena', resource: 'workgroup', resourceName: this.workgroup.name })],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: GLUE_READ_ACTIONS,
        resources: [
          stack.formatArn({ service: 'glue', resource: 'catalog' }),
          stack.formatArn({ service: 'glue', resource: 'database', resourceName: databaseName }),
          stack.formatArn({ service: 'glue', resource: 'table', resourceName: `${databaseName}/${LAKE_TABLE}` }),
        ],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetBucketLocation', 's3:ListBucket'],
        resources: [this.bucket.bucketArn],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject'],
        resources: [this.bucket.arnForObjects(`${EVENTS_PREFIX}*`), this.bucket.arnForObjects(`${MANIFESTS_PREFIX}*`)],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: RESULT_OBJECT_ACTIONS,
        resources: [this.bucket.arnForObjects(`${RESULTS_PREFIX}*`)],
      }),
    );
    // cdk-nag names the bucket's ARN by its logical id here (its aspect) or by this stack's output (its plugin).
    const bucket = this.bucket.node.defaultChild as CfnElement;
    const bucketArns = [
      `<${this.getLogicalId(bucket)}.Arn>`,
      `<${this.nestedStackParent!.getLogicalId(this.nestedStackResource!)}.Outputs.${Names.uniqueId(bucket)}Arn>`,
    ];
    for (const bucketArn of bucketArns)
      for (const objects of [EVENTS_PREFIX, MANIFESTS_PREFIX, RESULTS_PREFIX])
        Validations.of(role).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${bucketArn}/${objects}*]`,
          reason:
            objects === RESULTS_PREFIX
              ? "Athena's query results, written and read with the session's identity: this one bucket's results prefix; each session's policy narrows it to its project's folder."
              : `The lake's objects under ${objects}, which Athena reads with the session's identity: read only, this one bucket's prefix; each session's policy narrows it to its project's folder.`,
        });
    return role;
  }

  /**
   * A function that answers big trends from the lake (shared/lake/engine.ts): the names it queries
   * with, and the lake query role to assume, per project. No Athena, Glue or S3 of its own.
   */
  private grantQuery(fn: lambda.Function, databaseName: string, queryRole: string): void {
    const queryRoleArn = Stack.of(fn).formatArn({
      service: 'iam',
      region: '',
      resource: 'role',
      resourceName: queryRole,
    });
    fn.addEnvironment(ENV.lakeBucket, this.bucket.bucketName);
    fn.addEnvironment(ENV.lakeWorkgroup, this.workgroup.name);
    fn.addEnvironment(ENV.lakeDatabase, databaseName);
    fn.addEnvironment(ENV.lakeQueryRole, queryRoleArn);
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: [queryRoleArn] }));
  }

  /** The compactor: writes and replaces day files and pointers, nothing else of the bucket. */
  grantWrite(fn: lambda.Function): void {
    fn.addEnvironment(ENV.lakeBucket, this.bucket.bucketName);
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:PutObject', 's3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
        resources: [this.bucket.arnForObjects(`${EVENTS_PREFIX}*`), this.bucket.arnForObjects(`${MANIFESTS_PREFIX}*`)],
      }),
    );
    // cdk-nag's aspect names the bucket by its logical id in this nested stack; the validation plugin,
    // reading the function's synthesized template, by the output CDK passes it out through.
    const bucket = this.bucket.node.defaultChild as CfnElement;
    const bucketArns = [`<${this.getLogicalId(bucket)}.Arn>`];
    if (Stack.of(fn) !== this)
      bucketArns.push(`<${Stack.of(fn).getLogicalId(this.nestedStackResource!)}.Outputs.${Names.uniqueId(bucket)}Arn>`);
    for (const bucketArn of bucketArns)
      for (const prefix of [EVENTS_PREFIX, MANIFESTS_PREFIX])
        Validations.of(fn.role!).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${bucketArn}/${prefix}*]`,
          reason: `The lake's objects under ${prefix} (one folder per project and day, named at run time): object actions only, on this one bucket's prefix; query results and the rest of the bucket are not granted.`,
        });
  }
}
