import { findProjectByToken, type ProjectPointer } from '../db/organizations.ts';

/** How long a container trusts a token lookup: a found project, and a token that names none. */
export const TOKEN_FOUND_TTL_MS = 60_000;
export const TOKEN_UNKNOWN_TTL_MS = 30_000;
/** Tokens remembered per container; past it the oldest goes (a flood of random tokens cannot grow it). */
export const TOKEN_CACHE_CAP = 10_000;

interface Entry {
  lookup: Promise<ProjectPointer | undefined>;
  expiresAt: number;
}

const lookups = new Map<string, Entry>();

/**
 * Project token (phc_) -> project, remembered per container. Capture and the SDK endpoints are public:
 * anyone can send any token, so an unknown token is remembered too, and repeating it (or sending it in
 * many requests at once: they share the one lookup in flight) costs one table read per container per
 * TTL. A token names one project for the project's life; a deleted organization's token still works
 * for up to a minute in a container that looked it up, which only lets events land where no one reads them.
 * A failed read is not remembered.
 */
export function projectOfToken(token: string): Promise<ProjectPointer | undefined> {
  const at = Date.now();
  const known = lookups.get(token);
  if (known && known.expiresAt > at) return known.lookup;
  if (known) lookups.delete(token);
  const lookup = findProjectByToken(token);
  const entry: Entry = { lookup, expiresAt: Infinity };
  lookups.set(token, entry);
  if (lookups.size > TOKEN_CACHE_CAP) lookups.delete(lookups.keys().next().value!);
  lookup.then(
    (found) => {
      entry.expiresAt = Date.now() + (found ? TOKEN_FOUND_TTL_MS : TOKEN_UNKNOWN_TTL_MS);
    },
    () => {
      if (lookups.get(token) === entry) lookups.delete(token);
    },
  );
  return lookup;
}

/** Tests: forget every lookup. */
export function forgetTokenLookups(): void {
  lookups.clear();
}
