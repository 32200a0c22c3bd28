import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Debian's package; CHROMIUM_PATH points elsewhere (another Chromium or Chrome) on other systems. */
const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/** The one command a user who cannot install packages from here is told to run. */
export const CHROMIUM_INSTALL_COMMAND = 'sudo apt-get update && sudo apt-get install -y chromium';

export const CHROMIUM_INSTALL_HINT =
  'The browser SDK test (test/integration/browser-sdk.test.ts) drives a real Chromium. Install it:\n' +
  `  Debian/Ubuntu: ${CHROMIUM_INSTALL_COMMAND}\n` +
  '  elsewhere: set CHROMIUM_PATH to a Chromium or Chrome executable';

/**
 * Held (flock) around the install: vitest's workers, or two test runs on one machine, would otherwise
 * start two apt-gets, and the second fails on dpkg's lock instead of waiting. The waiters then find
 * Chromium installed and run nothing.
 */
const INSTALL_LOCK = join(tmpdir(), 'analytics-service-chromium-install.lock');
const INSTALL_SCRIPT =
  `[ -x ${DEFAULT_CHROMIUM} ] || { apt-get update -qq -o DPkg::Lock::Timeout=600 && ` +
  'apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium >/dev/null; }';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The Chromium the browser test launches, or undefined when there is none. */
export function findChromium(): string | undefined {
  const path = process.env.CHROMIUM_PATH || DEFAULT_CHROMIUM;
  return executable(path) ? path : undefined;
}

const succeeds = (command: string, args: string[]): boolean =>
  spawnSync(command, args, { stdio: 'ignore' }).status === 0;

/** What this machine allows; probed, or given by a test. */
export interface InstallAbility {
  root: boolean;
  passwordlessSudo: boolean;
  apt: boolean;
}

function probe(): InstallAbility {
  const root = process.getuid?.() === 0;
  return {
    root,
    passwordlessSudo: !root && succeeds('sudo', ['-n', 'true']),
    apt: succeeds('apt-get', ['--version']) && succeeds('flock', ['--version']),
  };
}

/**
 * The command that installs Debian's chromium (root, or passwordless sudo, with apt-get), or the error
 * naming the one command the user must run themselves.
 */
export function chromiumInstaller(can: InstallAbility): string[] | Error {
  if (!can.apt || !(can.root || can.passwordlessSudo))
    return new Error(
      `Chromium not found (${DEFAULT_CHROMIUM}) and this user cannot install it ` +
        `(${can.apt ? 'not root and no passwordless sudo' : 'no apt-get'}). Run:\n  ${CHROMIUM_INSTALL_COMMAND}\n` +
        '(or set CHROMIUM_PATH to a Chromium or Chrome executable)',
    );
  const asRoot = can.root ? [] : ['sudo', '-n'];
  return [...asRoot, 'env', 'DEBIAN_FRONTEND=noninteractive', 'flock', INSTALL_LOCK, 'sh', '-c', INSTALL_SCRIPT];
}

/**
 * Makes sure the browser test has a Chromium, as ensureJava does for DynamoDB Local's Java: as root or
 * with passwordless sudo on Debian it installs the `chromium` package (one installer at a time);
 * anywhere else it fails with the command to run. A CHROMIUM_PATH that is not executable is an error,
 * never silently replaced.
 */
export async function ensureChromium(can: () => InstallAbility = probe): Promise<string> {
  const found = findChromium();
  if (found) return found;
  if (process.env.CHROMIUM_PATH)
    throw new Error(`CHROMIUM_PATH=${process.env.CHROMIUM_PATH} is not an executable.\n${CHROMIUM_INSTALL_HINT}`);
  const installer = chromiumInstaller(can());
  if (installer instanceof Error) throw installer;
  console.error(`chromium not found: installing Debian's chromium (${installer.slice(0, -1).join(' ')} ...)`);
  const [command = 'sh', ...args] = installer;
  const status = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', resolve);
  });
  const installed = findChromium();
  if (installed) return installed;
  throw new Error(`Installing chromium failed (exit ${status}).\n${CHROMIUM_INSTALL_HINT}`);
}
