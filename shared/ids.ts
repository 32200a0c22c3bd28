import { createHash, randomBytes } from 'node:crypto';
import { now } from './clock.ts';

let lastMs = -1;
let sequence = 0;

/**
 * RFC 9562 UUID v7. Within one millisecond (or under a frozen clock) the 12-bit rand_a field is a
 * counter, so ids made by one process sort in creation order.
 */
export function uuidv7(): string {
  let ms = now().getTime();
  if (ms <= lastMs) {
    ms = lastMs;
    sequence += 1;
    if (sequence > 0xfff) {
      ms += 1;
      sequence = 0;
    }
  } else {
    sequence = randomBytes(2).readUInt16BE(0) & 0x7ff; // leave headroom so the counter rarely overflows
  }
  lastMs = ms;
  const bytes = randomBytes(16);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const requestHashes = new Map<string, Buffer>();

/**
 * RFC 9562 UUID v8 (the "custom" version): 74 bits of SHA-256(`key`), then `index` in the last 48
 * bits. The same key and index give the same id, which is what makes a resent capture request map
 * onto the events it already stored; the index keeps a request's events apart without hashing each
 * one (60,000 events, one hash). The last key's hash is kept: a request asks for it once per event.
 */
export function uuidOfIndex(key: string, index: number): string {
  let hash = requestHashes.get(key);
  if (!hash) {
    hash = createHash('sha256').update(key).digest();
    requestHashes.clear();
    requestHashes.set(key, hash);
  }
  const bytes = Buffer.alloc(16);
  hash.copy(bytes, 0, 0, 10);
  bytes.writeUIntBE(index, 10, 6);
  bytes[6] = 0x80 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `prefix` + url-safe random characters (43 from 32 bytes). */
export function randomToken(prefix: string, bytes = 32): string {
  return prefix + randomBytes(bytes).toString('base64url');
}
