/**
 * `npm start`: the whole service locally, no AWS account, no Docker.
 * DATA_DIR (default .data) keeps DynamoDB and S3 data across restarts; PORT (default 8000) is the API port;
 * LOCAL_SCHEDULER=off leaves the scheduled workers to `npm run cron`.
 */
import { join } from 'node:path';
import { buildConsole } from '../console-build.ts';
import { findChromium } from './chromium.ts';
import { ensureDevAccess } from './dev-seed.ts';
import { dataDir, localJsonPath, readLocalJson, writeLocalJson, type LocalStackInfo } from './local-json.ts';
import { startLocalStack } from './stack.ts';

async function main(): Promise<void> {
  const dir = dataDir();
  const port = Number(process.env.PORT || 8000);
  await buildConsole();
  // LOCAL_SCHEDULER=off: scheduled workers run only when asked (`npm run cron -- <name>`); benchmarks use it.
  const stack = await startLocalStack({ dataDir: dir, port, scheduler: process.env.LOCAL_SCHEDULER !== 'off' });
  const dev = await ensureDevAccess(await readLocalJson(dir));
  const info: LocalStackInfo = {
    base_url: stack.api.baseUrl,
    ...dev,
    table_name: stack.tableName,
    dynamodb_endpoint: stack.dynamodb.endpoint,
    sqs_endpoint: stack.sqs.endpoint,
    s3_endpoint: stack.s3.endpoint,
    queues: stack.queues,
    pid: process.pid,
  };
  await writeLocalJson(info, dir);
  console.log(
    [
      '',
      `Analytics service running at ${info.base_url}`,
      '',
      `  personal API key (all scopes, ${'dev@localhost'}): ${info.personal_api_key}`,
      `  organization id:  ${info.organization_id}`,
      `  project id:       ${info.project_id}`,
      `  project token:    ${info.project_token}`,
      '',
      `  DynamoDB Local ${info.dynamodb_endpoint}  SQS ${info.sqs_endpoint}  S3 ${info.s3_endpoint}`,
      `  data in ${join(dir)}; details in ${localJsonPath(dir)}`,
      '',
      `  console: open ${info.base_url}/ and paste the personal API key above to sign in`,
      `  try: curl -H "Authorization: Bearer ${info.personal_api_key}" ${info.base_url}/api/organizations/`,
      `  posthog-js: posthog.init('${info.project_token}', { api_host: '${info.base_url}' }) with the snippet (README, "posthog-js")`,
      ...(findChromium()
        ? []
        : [
            '',
            "  note: no Chromium found; npm test's browser test needs it: sudo apt-get install -y chromium (or set CHROMIUM_PATH)",
          ]),
      '',
    ].join('\n'),
  );
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.log('stopping...');
    await stack.stop();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
