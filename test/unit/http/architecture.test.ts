import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Handler files and the pipeline that feeds them (the OpenAPI generator and the router are not part of it). */
const checked = [
  ...tsFiles(join(ROOT, 'functions')).filter((f) => !f.endsWith('routes.ts')),
  join(ROOT, 'shared', 'http', 'handler.ts'),
  ...tsFiles(join(ROOT, 'shared', 'http', 'middleware')),
];

/** `x!.y`, `x!)`, `f()!`, `a[0]!`: a non-null assertion (negation `!x` and `!==` are not). */
const NON_NULL_ASSERTION = /[\w\])]!(?!=)/;
/** `as number` / `as string`: a cast standing in for a value the type should have carried. */
const PRIMITIVE_CAST = /\bas\s+(number|string)\b/;

describe('handlers and the HTTP pipeline', () => {
  it('use no non-null assertions or primitive casts: the request type carries what the route guarantees', () => {
    const offending = checked.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => ({ line: line.replace(/\/\/.*$/, ''), at: `${relative(ROOT, file)}:${i + 1}` }))
        .filter(({ line }) => NON_NULL_ASSERTION.test(line) || PRIMITIVE_CAST.test(line))
        .map(({ line, at }) => `${at}: ${line.trim()}`),
    );
    expect(checked.length).toBeGreaterThan(40);
    expect(offending).toEqual([]);
  });

  it('recognises the tricks it forbids', () => {
    for (const line of [
      'caller: s.caller!,',
      "split(';')[0]!.trim()",
      'reply.csv!()',
      'const id = params.id as number;',
    ]) {
      expect(NON_NULL_ASSERTION.test(line) || PRIMITIVE_CAST.test(line), line).toBe(true);
    }
    for (const line of ['if (!found) throw new NotFound();', 'a !== b', 'const ok = !x;']) {
      expect(NON_NULL_ASSERTION.test(line) || PRIMITIVE_CAST.test(line), line).toBe(false);
    }
  });
});
