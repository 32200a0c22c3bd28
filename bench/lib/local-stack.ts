/**
 * The local stack (`npm start`) as a child process for benchmarks: fresh DATA_DIR under the OS temp
 * folder, a free port, and a process group of its own so stopping it also stops DynamoDB Local (a
 * java grandchild). Only ever talks to 127.0.0.1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '#infra/build.ts';
import { freePort } from '#infra/local/ports.ts';
import { localJsonPath, type LocalStackInfo } from '#infra/local/local-json.ts';

export interface ChildStack {
  info: LocalStackInfo;
  dataDir: string;
  /** Milliseconds from spawn to a readable local.json. */
  startupMs: number;
  /** Last lines the child wrote (stdout + stderr), for diagnostics. */
  output(): string;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 8_000;

/** Every started group (pid -> its DATA_DIR), so an interrupted run (Ctrl-C, uncaught error) still stops and removes them. */
const live = new Map<number, string>();

function killGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
}

function groupAlive(pid: number): boolean {
  return killGroup(pid, 0);
}

let hooksInstalled = false;
function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  const killAll = () => {
    for (const [pid, dir] of live) {
      killGroup(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
    live.clear();
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(130);
    });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `scheduler: false` keeps the stack's scheduled workers from firing on their own (a benchmark runs them when it means to). */
export async function startChildStack(options: { scheduler?: boolean } = {}): Promise<ChildStack> {
  installExitHooks();
  const dataDir = await mkdtemp(join(tmpdir(), 'analytics-bench-'));
  const port = await freePort();
  let tail = '';
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-8000));
  const started = performance.now();
  const child: ChildProcess = spawn('npx', ['tsx', 'infra/local/start.ts'], {
    cwd: ROOT,
    // Benchmarks measure capacity, not the per-key rate limiter (one dev key would hit 480/min at once).
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      ANALYTICS_RATE_LIMITS: process.env.ANALYTICS_RATE_LIMITS ?? '{"enabled":false}',
      ...(options.scheduler === false ? { LOCAL_SCHEDULER: 'off' } : {}),
    },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const pid = child.pid;
  let spawnError: Error | undefined;
  child.once('error', (e) => (spawnError = e));
  if (pid !== undefined) live.set(pid, dataDir);

  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

  const stop = async () => {
    if (pid !== undefined && live.has(pid)) {
      killGroup(pid, 'SIGTERM');
      await Promise.race([exited, sleep(STOP_GRACE_MS)]);
      // The leader may be gone while java is still shutting down: give the group the same grace, then force it.
      const deadline = Date.now() + STOP_GRACE_MS;
      while (groupAlive(pid) && Date.now() < deadline) await sleep(100);
      if (groupAlive(pid)) killGroup(pid, 'SIGKILL');
      live.delete(pid);
    }
    await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
  };

  try {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (spawnError) throw new Error(`could not start the local stack: ${spawnError.message}`);
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `local stack exited (${child.exitCode ?? child.signalCode}) before writing local.json:\n${tail}`,
        );
      }
      const info = await readInfo(dataDir);
      if (info) {
        if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(info.base_url))
          throw new Error(`refusing non-loopback base_url ${info.base_url}`);
        return { info, dataDir, startupMs: performance.now() - started, output: () => tail, stop };
      }
      if (Date.now() > deadline)
        throw new Error(
          `local stack did not write ${localJsonPath(dataDir)} within ${START_TIMEOUT_MS / 1000} s:\n${tail}`,
        );
      await sleep(100);
    }
  } catch (error) {
    await stop();
    throw error;
  }
}

/** local.json once it is complete (it may be caught half-written). */
async function readInfo(dir: string): Promise<LocalStackInfo | undefined> {
  let text: string;
  try {
    text = await readFile(localJsonPath(dir), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const info = JSON.parse(text) as Partial<LocalStackInfo>;
    return info.base_url && info.personal_api_key && info.organization_id ? (info as LocalStackInfo) : undefined;
  } catch {
    return undefined;
  }
}
