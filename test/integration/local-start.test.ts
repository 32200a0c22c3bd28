import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/ports.ts';
import { client } from '../support/api.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const running: ChildProcess[] = [];

async function start(dataDir: string, port: number) {
  const jsonPath = join(dataDir, 'local.json');
  const startedAt = Date.now();
  const child = spawn('npx', ['tsx', 'infra/local/start.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), TABLE_NAME: '', AWS_ENDPOINT_URL_DYNAMODB: '' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const deadline = Date.now() + 60_000;
  while (!existsSync(jsonPath) || statSync(jsonPath).mtimeMs < startedAt || !output.includes('running at')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start failed: ${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, output, info: JSON.parse(await readFile(jsonPath, 'utf8')) };
}

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

async function stop(child: ChildProcess) {
  if (!alive(child)) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid!, 'SIGTERM');
  await exited;
}

afterAll(async () => {
  for (const child of running) {
    try {
      if (alive(child)) process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

describe('npm start', () => {
  it('serves the API with a ready key, writes local.json, and keeps data across a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'analytics-start-'));
    const port = await freePort();
    const first = await start(dataDir, port);
    const { info } = first;
    expect(info).toMatchObject({ base_url: `http://127.0.0.1:${port}`, table_name: expect.any(String) });
    expect(info.personal_api_key).toMatch(/^phx_/);
    expect(info.project_token).toMatch(/^phc_/);
    expect(Number.isInteger(info.project_id)).toBe(true);
    for (const endpoint of ['dynamodb_endpoint', 'sqs_endpoint', 's3_endpoint'])
      expect(info[endpoint]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const value of [
      info.base_url,
      info.personal_api_key,
      info.organization_id,
      String(info.project_id),
      info.project_token,
    ]) {
      expect(first.output).toContain(value);
    }
    const c = client(info.base_url, info.personal_api_key);
    const org = await c.get(`/api/organizations/${info.organization_id}/`);
    expect(org.status).toBe(200);
    expect(org.body.teams[0].api_token).toBe(info.project_token);
    const extra = await c.post('/api/organizations/', { name: 'Survives restarts' });
    expect(extra.status).toBe(201);
    await stop(first.child);

    const second = await start(dataDir, port);
    expect(second.info.personal_api_key).toBe(info.personal_api_key);
    expect(second.info.organization_id).toBe(info.organization_id);
    const again = await client(second.info.base_url, info.personal_api_key).get(`/api/organizations/${extra.body.id}`);
    expect(again.status).toBe(200);
    expect(again.body.name).toBe('Survives restarts');
    await stop(second.child);
    await rm(dataDir, { recursive: true, force: true });
  }, 120_000);
});
