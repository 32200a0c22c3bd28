import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** What `$DATA_DIR/local.json` tells scripts and CLIs about a running local stack. */
export interface LocalStackInfo {
  base_url: string;
  personal_api_key: string;
  organization_id: string;
  project_id: number;
  project_token: string;
  table_name: string;
  dynamodb_endpoint: string;
  sqs_endpoint: string;
  s3_endpoint: string;
  queues: Record<string, string>;
  pid: number;
}

export function dataDir(): string {
  return resolve(process.env.DATA_DIR || '.data');
}

export const localJsonPath = (dir = dataDir()) => join(dir, 'local.json');

export async function readLocalJson(dir = dataDir()): Promise<LocalStackInfo | undefined> {
  try {
    return JSON.parse(await readFile(localJsonPath(dir), 'utf8')) as LocalStackInfo;
  } catch {
    return undefined;
  }
}

export async function writeLocalJson(info: LocalStackInfo, dir = dataDir()): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(localJsonPath(dir), `${JSON.stringify(info, null, 2)}\n`);
}
