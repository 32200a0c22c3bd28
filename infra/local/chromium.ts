import { accessSync, constants } from 'node:fs';

/** Debian's package; CHROMIUM_PATH points elsewhere (another Chromium or Chrome) on other systems. */
const DEFAULT_CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_INSTALL_HINT =
  'The browser SDK test (test/integration/browser-sdk.test.ts) drives a real Chromium. Install it, for example:\n' +
  '  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y chromium\n' +
  '  elsewhere: set CHROMIUM_PATH to a Chromium or Chrome executable\n' +
  '(.ci/run installs it on CI.)';

/** The Chromium the browser test launches, or undefined when there is none. */
export function findChromium(): string | undefined {
  const path = process.env.CHROMIUM_PATH || DEFAULT_CHROMIUM;
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}
