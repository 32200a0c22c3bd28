import { afterEach, describe, expect, it, vi } from 'vitest';
import { slugCandidate, slugify } from '#shared/domain/slug.ts';

describe('slugify', () => {
  it.each([
    ['Acme Inc', 'acme-inc'],
    ['  Hello,   World!  ', 'hello-world'],
    ['Ünïcödé Straße', 'unicode-strae'],
    ['a--b__c', 'a-b__c'],
    ['---x---', 'x'],
    ['日本語', ''],
  ])('%j -> %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });

  it('caps at 48 and suffixes later attempts with - and 4 letters within 48', () => {
    const long = 'x'.repeat(80);
    expect(slugCandidate(long, 0)).toBe('x'.repeat(48));
    const retry = slugCandidate(long, 1);
    expect(retry).toMatch(/^x{43}-[a-z]{4}$/);
    expect(slugCandidate('日本語', 0)).toBe('organization');
  });
});

describe('uuidv7', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it('has version 7 and the RFC variant and carries the timestamp', async () => {
    const { uuidv7 } = await import('#shared/ids.ts');
    const before = Date.now();
    const id = uuidv7();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now());
  });

  it('sorts in creation order even under a frozen clock', async () => {
    vi.stubEnv('ANALYTICS_FIXED_NOW', '2024-02-29T12:00:00Z');
    vi.resetModules();
    const { uuidv7 } = await import('#shared/ids.ts');
    const ids = Array.from({ length: 5000 }, () => uuidv7());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16)).toBe(Date.parse('2024-02-29T12:00:00Z'));
  });
});
