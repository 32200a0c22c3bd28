import { config } from './config.ts';

/** The one source of server-side "now": API, capture, workers and crons all read it here. */
export function now(): Date {
  const fixed = config().fixedNow;
  return fixed ? new Date(fixed.getTime()) : new Date();
}

export function nowIso(): string {
  return now().toISOString();
}
