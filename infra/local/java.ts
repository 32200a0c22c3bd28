import { execFileSync, spawnSync } from 'node:child_process';

const INSTALL_HINT =
  'DynamoDB Local needs a Java runtime (17 or newer). Install one, for example:\n' +
  '  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y default-jre-headless\n' +
  '  macOS (Homebrew): brew install openjdk@17\n' +
  'then run the command again.';

function hasJava(): boolean {
  return spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Makes sure `java` runs. As root in CI (CI=true) on Debian it installs default-jre-headless;
 * anywhere else it stops with exactly what to install.
 */
export function ensureJava(): void {
  if (hasJava()) return;
  const isRoot = process.getuid?.() === 0;
  if (isRoot && process.env.CI && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0) {
    console.error('java not found: installing default-jre-headless (CI, root)...');
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'default-jre-headless'], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (hasJava()) return;
  }
  throw new Error(INSTALL_HINT);
}
