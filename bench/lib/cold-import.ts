/**
 * Module-init time of a bundle: `await import()` in a fresh node process, timed inside that process
 * with performance.now(). Runs outside the repo (cwd = OS temp dir) with no loader flags inherited.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';

const MARK = 'BENCH_INIT_MS=';
const TIMEOUT_MS = 30_000;

const SCRIPT = [
  "import { pathToFileURL } from 'node:url';",
  'const target = pathToFileURL(process.env.BENCH_BUNDLE).href;',
  'const t0 = performance.now();',
  'await import(target);',
  'const ms = performance.now() - t0;',
  `process.stdout.write('\\n${MARK}' + ms + '\\n');`,
  // A bundle may open handles at init (SDK clients, timers): do not wait for them.
  'process.exit(0);',
].join('\n');

/** The environment a handler module gets at init: enough config that reads do not fail, nothing that loads tsx. */
function childEnv(bundle: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TABLE_NAME: 'bench', AWS_REGION: 'us-east-1', BENCH_BUNDLE: bundle };
  delete env.NODE_OPTIONS;
  return env;
}

export function coldImportMs(bundle: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], {
      cwd: tmpdir(),
      env: childEnv(bundle),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith(MARK));
      const ms = line ? Number(line.slice(MARK.length)) : Number.NaN;
      if (code === 0 && Number.isFinite(ms)) resolve(ms);
      else reject(new Error(`cold import of ${bundle} failed (exit ${code ?? signal}): ${err.trim() || out.trim()}`));
    });
  });
}
