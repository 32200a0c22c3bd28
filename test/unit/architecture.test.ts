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
      .flatMap((line, i) =>
        pattern.test(line) ? [`${relative(ROOT, join(ROOT, file))}:${i + 1}: ${line.trim()}`] : [],
      ),
  );
}

const SERVICE_CODE = [...sources('shared'), ...sources('functions')];

/**
 * Code above the storage seam: it talks to shared/db stores through functions named by intent, with domain types and opaque cursors.
 * (infra/ is not checked: its IAM conditions name key prefixes through shared/db/keys.ts.)
 */
const ABOVE_THE_SEAM = [
  'shared/domain',
  'shared/exports',
  'shared/capture',
  'shared/workers',
  'shared/http',
  'functions',
].flatMap(sources);

/** What only shared/db may know: key builders and the table client (its internals), DynamoDB's paging keys, the table's attribute names, the DynamoDB SDK. */
const STORAGE_DETAIL =
  /db\/(keys|client|query|items|table-schema|counters)\.ts|\bItemKey\b|\bPageKey\b|LastEvaluatedKey|ExclusiveStartKey|@aws-sdk\/(client-dynamodb|lib-dynamodb|util-dynamodb)|aws\/dynamodb\.ts|\bAttributeValue\b|\b(pk|sk|parent_pk|parent_sk|day_pk|day_sk|did_pk|did_sk|ins_pk|ins_sk|due_pk|due_sk|email_pk)\b/;

describe('architecture', () => {
  it('retries and sleeps only through shared/retry.ts (one backoff, one reading of "give up")', () => {
    const others = SERVICE_CODE.filter((f) => f !== join('shared', 'retry.ts'));
    expect(offending(others, /for \(let (attempt|round|tries|retry)\b/)).toEqual([]);
    expect(offending(others, /new Promise\W+(\w+\W+)?=>\s*setTimeout\(|node:timers\/promises/)).toEqual([]);
  });

  it('reads a cancelled transaction or a failed condition only in shared/db/client.ts', () => {
    // shared/aws/dynamodb.ts defines the command and passes the service's error on unread.
    const others = SERVICE_CODE.filter(
      (f) => f !== join('shared', 'db', 'client.ts') && f !== join('shared', 'aws', 'dynamodb.ts'),
    );
    expect(
      offending(others, /CancellationReasons|ConditionalCheckFailed|TransactionCanceled|TransactWriteCommand/),
    ).toEqual([]);
  });

  it('keeps storage details below the seam: no key, paging key, attribute name or DynamoDB SDK type above shared/db', () => {
    expect(offending(ABOVE_THE_SEAM, STORAGE_DETAIL)).toEqual([]);
  });

  it('keeps shared/db below the domain: stores never import shared/domain (record types live with their store)', () => {
    expect(offending(sources(join('shared', 'db')), /from '\.\.\/domain\//)).toEqual([]);
  });
});
