import * as zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { destinationConfig } from '#shared/exports/destination-rules.ts';
import { COMPRESSIONS, encodeFiles, objectKey } from '#shared/exports/files.ts';

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
      { partial: false, allowLoopback: false },
    );
    expect(config).toMatchObject({ max_file_size_mb: 10, use_virtual_style_addressing: true });
  });
});
