import * as zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import { destinationConfig, prefixProblem } from '#shared/exports/destination-rules.ts';
import { COMPRESSIONS, encodeFiles, longestKeyBytes, MAX_FILE_NAME_BYTES, objectKey } from '#shared/exports/files.ts';

const rows = Array.from({ length: 500 }, (_, i) => ({ uuid: `u${i}`, blob: 'x'.repeat(200 + (i % 50)), n: i }));

describe('encodeFiles', () => {
  it('keeps every file within the bound, every row once, in order', () => {
    for (const format of ['JSONLines', 'Parquet'] as const) {
      const files = encodeFiles(rows, ['uuid', 'blob', 'n'], format, 'none', 20_000);
      expect(files.length).toBeGreaterThan(1);
      expect(files.every((f) => f.body.length <= 20_000)).toBe(true);
      expect(files.reduce((n, f) => n + f.records, 0)).toBe(500);
    }
    const lines = encodeFiles(rows, [], 'JSONLines', 'none', 20_000).flatMap((f) =>
      f.body.toString().trim().split('\n'),
    );
    expect(lines.map((l) => JSON.parse(l).uuid)).toEqual(rows.map((r) => r.uuid));
  });

  it('writes one file without a bound, and numbers split files from 0', () => {
    expect(encodeFiles(rows, ['uuid'], 'JSONLines', 'gzip')).toHaveLength(1);
    const w = { start: new Date('2024-05-01T10:00:00Z'), end: new Date('2024-05-01T11:00:00Z') };
    expect(objectKey('p', w, 'events', 'parquet', 1)).toBe(
      'p/2024-05-01T10:00:00.000Z-2024-05-01T11:00:00.000Z-1.parquet',
    );
  });
});

describe('compressions per format', () => {
  it('offers zstd for Parquet exactly when node:zlib can write it, never lz4, and no Parquet codec for JSONLines', () => {
    const hasZstd = typeof (zlib as unknown as Record<string, unknown>).zstdCompressSync === 'function';
    expect(COMPRESSIONS.Parquet.includes('zstd')).toBe(hasZstd);
    expect(COMPRESSIONS.Parquet).not.toContain('lz4');
    expect(COMPRESSIONS.JSONLines).toEqual(['none', 'gzip', 'brotli']);
  });

  it('converts the numbers and booleans PostHog converts from strings', () => {
    const config = destinationConfig(
      'S3Compatible',
      {
        bucket_name: 'bkt',
        prefix: 'p',
        endpoint_url: 'https://s3.example.com',
        max_file_size_mb: '10',
        use_virtual_style_addressing: 'true',
      },
      { partial: false, loopbackOrigins: new Set() },
    );
    expect(config).toMatchObject({ max_file_size_mb: 10, use_virtual_style_addressing: true });
  });
});

describe('the export prefix', () => {
  const window = (start: Date, end: Date) => ({ start, end });
  // The longest a window's end can print: JS dates stop at +275760-09-13 (27 characters).
  const last = new Date(8.64e15);
  const problem = (prefix: string) => prefixProblem(prefix);

  it('knows the longest file name: 27 + "-" + 27 + "-9999999" + ".jsonl.gz" = 72 bytes (a manifest needs 69)', () => {
    expect(MAX_FILE_NAME_BYTES).toBe(27 + 1 + 27 + 8 + 9);
    expect(longestKeyBytes('')).toBe(72);
    // "a/" + 27 ({data_interval_start}) + "/" + 7 ("persons") = 37, then "/" and the file name.
    expect(longestKeyBytes('a/{data_interval_start}/{table}/')).toBe(37 + 1 + 72);
    // Bytes, not characters: é is two bytes in UTF-8.
    expect(longestKeyBytes('é')).toBe(2 + 1 + 72);
  });

  it("is capped so that every key fits S3's 1,024 bytes, and the cap is tight", () => {
    const atCap = 'x'.repeat(1024 - 1 - 72);
    expect(problem(atCap)).toBeUndefined();
    expect(problem(`${atCap}x`)).toBe(
      "Object keys under this prefix reach 1025 bytes (placeholders at their longest, plus up to 72 bytes of file name), over S3's limit of 1,024 bytes: shorten the prefix by 1 bytes.",
    );
    expect(problem('é'.repeat(476))).toMatch(/reach 1025 bytes/);
    expect(problem('é'.repeat(475))).toBeUndefined();
    // Placeholders count at their longest: {data_interval_end} is 19 characters and prints up to 27.
    const withPlaceholders = `{data_interval_start}/{data_interval_end}/{table}/${'y'.repeat(1024 - 72 - 1 - 27 - 27 - 7 - 3)}`;
    expect(problem(withPlaceholders)).toBeUndefined();
    expect(problem(`${withPlaceholders}y`)).toMatch(/reach 1025 bytes/);
    // The longest keys such a prefix really gets (a split file, the manifest) are within the limit, the first exactly at it.
    const w = window(last, last);
    expect(Buffer.byteLength(objectKey(withPlaceholders, w, 'persons', 'jsonl.gz', 9_999_999))).toBe(1024);
    expect(Buffer.byteLength(objectKey(withPlaceholders, w, 'persons', 'manifest.json'))).toBeLessThanOrEqual(1024);
    // A trailing slash is dropped when the key is made, so it costs nothing.
    expect(problem(`${atCap}///`)).toBeUndefined();
  });

  it.each([
    ['{foo}', '{foo}'],
    ['exports/{Year}/{month}', '{Year}'],
    ['{constructor}/{toString}', '{constructor}, {toString}'],
    ['a/{}/b', '{}'],
    ['{year}-{week}', '{week}'],
    ['{ year }', '{ year }'],
  ])('refuses %s, naming its unknown placeholders (%s)', (prefix, named) => {
    expect(problem(prefix)).toBe(
      `Unknown placeholder${named.includes(',') ? 's' : ''} in the prefix: ${named}. A prefix may use {year}, {month}, {day}, {hour}, {minute}, {second}, {table}, {data_interval_start}, {data_interval_end}.`,
    );
  });

  it.each([
    ['..', '".."'],
    ['.', '"."'],
    ['../other-tenant', '".."'],
    ['exports/../../x', '".."'],
    ['exports/./{year}', '"."'],
    ['a/./b/../c', '"." and ".."'],
    ['exports/..', '".."'],
  ])('refuses the dot segments of %s', (prefix, named) => {
    expect(problem(prefix)).toBe(`The prefix must not have "." or ".." path segments (it has ${named}).`);
  });

  it.each([
    '',
    'posthog/{year}/{month}/{day}/{hour}/{minute}/{second}/{table}',
    '{data_interval_start}-{data_interval_end}',
    'a..b/.hidden/.../v1.2/',
    '/leading',
  ])('takes %j', (prefix) => {
    expect(problem(prefix)).toBeUndefined();
  });

  it('is checked by the destination rules, the 400 on the prefix field', () => {
    const check = (prefix: string) => {
      try {
        destinationConfig(
          'S3',
          { bucket_name: 'bkt', region: 'us-east-1', prefix, role_arn: 'arn:aws:iam::123456789012:role/w' },
          { partial: false, loopbackOrigins: new Set() },
        );
        return undefined;
      } catch (error) {
        return error as ValidationError;
      }
    };
    for (const bad of ['{nope}', 'a/../b', 'z'.repeat(952)]) {
      expect(check(bad), bad).toBeInstanceOf(ValidationError);
      expect(check(bad)!.attr, bad).toBe('destination__config__prefix');
    }
    expect(check('ok/{year}')).toBeUndefined();
  });
});
