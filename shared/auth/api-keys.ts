import { createHash } from 'node:crypto';
import { randomToken } from '../ids.ts';

export const PERSONAL_API_KEY_PREFIX = 'phx_';
export const PROJECT_TOKEN_PREFIX = 'phc_';

/** `phx_` + 43 url-safe random characters (256 bits). Shown once; only its hash is stored. */
export function generatePersonalApiKey(): string {
  return randomToken(PERSONAL_API_KEY_PREFIX);
}

export function generateProjectToken(): string {
  return randomToken(PROJECT_TOKEN_PREFIX);
}

/** PostHog's current storage form: unsalted single-round SHA-256, so lookup is one GetItem by hash. */
export function secureValue(rawKey: string): string {
  return `sha256$${createHash('sha256').update(rawKey).digest('hex')}`;
}

/** `phx_...abcd` (PostHog shows the first 4 and last 4 characters). */
export function maskValue(rawKey: string): string {
  return rawKey.length < 16 ? '********' : `${rawKey.slice(0, 4)}...${rawKey.slice(-4)}`;
}

const BEARER = /^Bearer\s+(\S.*)$/;

/** The key from `Authorization: Bearer <key>`, else the `personal_api_key` query parameter (PostHog's order). */
export function extractPersonalApiKey(
  authorization: string | undefined,
  queryKey: string | undefined,
): { key: string; source: 'Authorization header' | 'query string' } | undefined {
  const header = authorization ? BEARER.exec(authorization.trim()) : null;
  if (header?.[1]) return { key: header[1].trim(), source: 'Authorization header' };
  if (queryKey) return { key: queryKey, source: 'query string' };
  return undefined;
}
