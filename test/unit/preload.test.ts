import { describe, expect, it } from 'vitest';
import { loadedBeforeHandling, preloadLibraries } from '#shared/preload.ts';

describe('shared/preload: libraries loaded before the handler, not at module init', () => {
  it('runs each registered loader once; one that failed runs again at the next invocation', async () => {
    let calls = 0;
    let fail = true;
    const use = () => 'used';
    expect(
      loadedBeforeHandling(async () => {
        calls++;
        if (fail) throw new Error('network');
      }, use),
    ).toBe(use);
    await expect(preloadLibraries()).rejects.toThrow('network');
    fail = false;
    await preloadLibraries();
    await preloadLibraries();
    expect(calls).toBe(2);
  });
});
