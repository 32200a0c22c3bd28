import { describe, expect, it } from 'vitest';
import { hasScope, isGrantableScope } from '#shared/auth/scopes.ts';
import {
  extractPersonalApiKey,
  generatePersonalApiKey,
  generateProjectToken,
  maskValue,
  secureValue,
} from '#shared/auth/api-keys.ts';

describe('scopes', () => {
  it('grants a scope that is held, or implied by write, or by *', () => {
    expect(hasScope(['person:read'], 'person:read')).toBe(true);
    expect(hasScope(['person:write'], 'person:read')).toBe(true);
    expect(hasScope(['*'], 'batch_export:write')).toBe(true);
  });

  it('does not let read imply write, nor one object grant another with a shared prefix', () => {
    expect(hasScope(['person:read'], 'person:write')).toBe(false);
    expect(hasScope(['organization_member:write'], 'organization:read')).toBe(false);
    expect(hasScope([], 'organization:read')).toBe(false);
  });

  it('accepts only known object:action pairs and *', () => {
    expect(isGrantableScope('*')).toBe(true);
    expect(isGrantableScope('insight:read')).toBe(true);
    for (const bad of ['insight:admin', 'nope:read', 'person', '', 'person:read ', '**'])
      expect(isGrantableScope(bad)).toBe(false);
  });
});

describe('personal API keys', () => {
  it('look like phx_ + 40+ url-safe characters and are unique', () => {
    const a = generatePersonalApiKey();
    expect(a).toMatch(/^phx_[A-Za-z0-9_-]{40,}$/);
    expect(generatePersonalApiKey()).not.toBe(a);
    expect(generateProjectToken()).toMatch(/^phc_[A-Za-z0-9_-]{40,}$/);
  });

  it('are stored as sha256$<hex> of the raw value', () => {
    expect(secureValue('phx_abc')).toMatch(/^sha256\$[0-9a-f]{64}$/);
    // sha256("abc") is a published test vector
    expect(secureValue('abc')).toBe('sha256$ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('are masked as first four ... last four', () => {
    expect(maskValue('phx_0123456789abcdefWXYZ')).toBe('phx_...WXYZ');
    expect(maskValue('short')).toBe('********');
  });

  it('are read from Authorization: Bearer first, then the query string', () => {
    expect(extractPersonalApiKey('Bearer phx_a', 'phx_q')).toEqual({ key: 'phx_a', source: 'Authorization header' });
    expect(extractPersonalApiKey('Basic xyz', 'phx_q')).toEqual({ key: 'phx_q', source: 'query string' });
    expect(extractPersonalApiKey(undefined, undefined)).toBeUndefined();
    expect(extractPersonalApiKey('Bearer ', undefined)).toBeUndefined();
  });
});
