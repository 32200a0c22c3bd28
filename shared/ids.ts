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

/**
 * RFC 9562 UUID v8 (the "custom" version) from a SHA-256 of `parts`: the same parts give the same id,
 * which is what makes a resent capture request map onto the events it already stored.
 */
export function uuidFromParts(...parts: (string | number)[]): string {
  const bytes = createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 16);
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
