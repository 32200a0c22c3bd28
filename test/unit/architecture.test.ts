import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `file:line: text` of every line of `files` matching `pattern`. */
function offending(files: string[], pattern: RegExp): string[] {
  return files.flatMap((file) =>
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) ? [`${relative(ROOT, join(ROOT, file))}:${i + 1}: ${line.trim()}`] : [])),
  );
}

const SERVICE_CODE = [...sources('shared'), ...sources('functions')];

describe('architecture', () => {
  it('retries and sleeps only through shared/retry.ts (one backoff, one reading of "give up")', () => {
    const others = SERVICE_CODE.filter((f) => f !== join('shared', 'retry.ts'));
    expect(offending(others, /for \(let (attempt|round|tries|retry)\b/)).toEqual([]);
    expect(offending(others, /new Promise\W+(\w+\W+)?=>\s*setTimeout\(|node:timers\/promises/)).toEqual([]);
  });

  it('reads a cancelled transaction or a failed condition only in shared/db/client.ts', () => {
    const others = SERVICE_CODE.filter((f) => f !== join('shared', 'db', 'client.ts'));
    expect(offending(others, /CancellationReasons|ConditionalCheckFailed|TransactionCanceled|TransactWriteCommand/)).toEqual([]);
  });
});
