import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { uniqueEmail, useApi } from '../support/api.ts';

const run = promisify(execFile);
const api = useApi();
const ROOT = join(import.meta.dirname, '..', '..');

async function keyCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string; code?: number }> {
  const clean = { ...process.env };
  for (const name of ['TABLE_NAME', 'AWS_ENDPOINT_URL_DYNAMODB', 'DATA_DIR']) delete clean[name];
  return run('npx', ['tsx', 'infra/cli/key.ts', ...args], { cwd: ROOT, env: { ...clean, ...env } }).catch(
    (e) => e as { stdout: string; stderr: string; code: number },
  );
}

/** The AWS environment naming the test table, as a deployed stage's operator would set it. */
const awsEnv = {
  TABLE_NAME: inject('tableName'),
  AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'x',
  AWS_SECRET_ACCESS_KEY: 'x',
};

describe('npm run key', () => {
  it('creates, lists and revokes keys against the table the AWS environment names', async () => {
    const email = uniqueEmail('cli');
    const created = await keyCli(['create', '--email', email, '--scopes', 'organization:read'], awsEnv);
    const key = created.stdout.trim().split('\n').at(-1)!;
    expect(key).toMatch(/^phx_[A-Za-z0-9_-]{40,}$/);
    expect((await api.as(key).get('/api/organizations')).status).toBe(200);
    expect((await api.as(key).post('/api/organizations', { name: 'x' })).status).toBe(403);

    const listed = await keyCli(['list', '--email', email], awsEnv);
    const mask = `${key.slice(0, 4)}...${key.slice(-4)}`;
    expect(listed.stdout).toContain(mask);
    expect(listed.stdout).not.toContain(key);

    const revoked = await keyCli(['revoke', '--email', email, '--key', mask], awsEnv);
    expect(revoked.stdout).toContain('Revoked 1');
    expect((await api.as(key).get('/api/organizations')).status).toBe(401);
  });

  it('finds a running local stack through $DATA_DIR/local.json', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'analytics-cli-'));
    await writeFile(
      join(dataDir, 'local.json'),
      JSON.stringify({
        base_url: api.baseUrl,
        table_name: inject('tableName'),
        dynamodb_endpoint: inject('dynamodbEndpoint'),
      }),
    );
    const created = await keyCli(['create', '--email', uniqueEmail('cli'), '--scopes', '*'], { DATA_DIR: dataDir });
    expect(created.stdout).toContain(`local stack ${api.baseUrl}`);
    const key = created.stdout.trim().split('\n').at(-1)!;
    expect((await api.as(key).post('/api/organizations', { name: 'From CLI key' })).status).toBe(201);
  });

  it('says how to start a stack when there is none and rejects unknown scopes', async () => {
    const none = await keyCli(['list', '--email', 'a@b.c'], { DATA_DIR: join(tmpdir(), 'no-such-analytics-dir') });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('start one with npm start');
    const bad = await keyCli(['create', '--email', uniqueEmail('cli'), '--scopes', 'root:admin'], awsEnv);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('Invalid scope: root:admin');
  });
});
