/**
 * `npm run cron -- <job>`: fires a scheduled worker now, against the running local stack found through
 * $DATA_DIR/local.json (the same handler the stack's scheduler fires on its schedule).
 */
import { workers } from '#functions/routes.ts';
import { configureLocalEnv } from '../local/env.ts';
import { localJsonPath, readLocalJson } from '../local/local-json.ts';
import { runWorker, scheduledEvent } from '../local/workers.ts';

const jobs = workers.flatMap((w) =>
  'command' in w
    ? [{ command: w.command, name: w.name, schedule: 'schedule' in w.trigger ? w.trigger.schedule : '' }]
    : [],
);

async function main(): Promise<void> {
  const [command] = process.argv.slice(2).filter((a) => a !== '--');
  const job = jobs.find((j) => j.command === command);
  if (!job)
    throw new Error(
      `usage: npm run cron -- <job>\njobs:\n${jobs.map((j) => `  ${j.command}  (${j.schedule})`).join('\n')}`,
    );
  const local = await readLocalJson();
  if (!local) throw new Error(`No local stack found at ${localJsonPath()}: start one with npm start.`);
  configureLocalEnv({
    tableName: local.table_name,
    dynamodb: local.dynamodb_endpoint,
    sqs: local.sqs_endpoint,
    queues: local.queues,
    // The stack's own S3 stand-in: the one loopback origin its exports may write to (as in the stack's process).
    exportLoopbackOrigins: [local.s3_endpoint],
  });
  const started = Date.now();
  const result = await runWorker(job.name, scheduledEvent(job.name));
  console.log(`${job.command} finished in ${Date.now() - started} ms: ${JSON.stringify(result)}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
