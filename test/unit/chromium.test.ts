import { describe, expect, it } from 'vitest';
import { CHROMIUM_INSTALL_COMMAND, chromiumInstaller } from '../../infra/local/chromium.ts';

describe('chromiumInstaller (the browser SDK test on a fresh machine)', () => {
  it('installs as root, or through passwordless sudo, one installer at a time (flock)', () => {
    const asRoot = chromiumInstaller({ root: true, passwordlessSudo: false, apt: true });
    const withSudo = chromiumInstaller({ root: false, passwordlessSudo: true, apt: true });
    expect(asRoot).toEqual(expect.arrayContaining(['flock', 'sh']));
    expect(asRoot).not.toContain('sudo');
    expect(withSudo).toEqual(expect.arrayContaining(['sudo', '-n', 'flock']));
    expect(String((asRoot as string[]).at(-1))).toMatch(/apt-get install -y .*chromium/);
  });

  it.each([
    [{ root: false, passwordlessSudo: false, apt: true }, 'not root and no passwordless sudo'],
    [{ root: true, passwordlessSudo: false, apt: false }, 'no apt-get'],
  ])('where it cannot install (%j), fails naming the one command to run', (can, why) => {
    const refusal = chromiumInstaller(can);
    expect(refusal).toBeInstanceOf(Error);
    expect((refusal as Error).message).toContain(why);
    expect((refusal as Error).message).toContain(`Run:\n  ${CHROMIUM_INSTALL_COMMAND}`);
  });
});
