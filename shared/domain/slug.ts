import { randomInt } from 'node:crypto';

export const MAX_SLUG_LENGTH = 48;

/** Django's slugify: ASCII-fold, drop what is not a word character, space or hyphen, lower-case, hyphenate. */
export function slugify(name: string): string {
  return (
    name
      .normalize('NFKD')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the class is "every non-ASCII character"; \x00 is its lower bound, not a match for control characters.
      .replace(/[^\x00-\x7f]/g, '')
      .replace(/[^\w\s-]/g, '')
      .trim()
      .toLowerCase()
      .replace(/[-\s]+/g, '-')
      .replace(/^[-_]+|[-_]+$/g, '')
  );
}

/** The slug to try on attempt `n` (0 = the bare slug; later attempts add `-` and 4 random letters, as PostHog does). */
export function slugCandidate(name: string, attempt: number): string {
  const base = slugify(name).slice(0, MAX_SLUG_LENGTH) || 'organization';
  if (attempt === 0) return base;
  const suffix = Array.from({ length: 4 }, () => String.fromCharCode(97 + randomInt(26))).join('');
  return `${base.slice(0, MAX_SLUG_LENGTH - 5)}-${suffix}`;
}
