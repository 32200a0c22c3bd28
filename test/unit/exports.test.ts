import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { encodeRows, objectKey, renderPrefix } from '#shared/exports/files.ts';
import { parseExportQuery } from '#shared/exports/hogql.ts';
import { ceilBoundary, firstWindowEnd, floorBoundary, INTERVALS, windowCount, windowsBetween } from '#shared/exports/intervals.ts';
import { ValidationError } from '#shared/errors.ts';
import { readSlices, RUN_LEASE_MS, takeTurns } from '#shared/domain/export-runs.ts';
import { workers } from '#functions/routes.ts';

const d = (iso: string) => new Date(iso);

describe('export intervals', () => {
  it.each([
    ['hour', '2024-05-01T10:20:00Z', '2024-05-01T10:00:00.000Z', '2024-05-01T11:00:00.000Z'],
    ['day', '2024-05-01T10:20:00Z', '2024-05-01T00:00:00.000Z', '2024-05-02T00:00:00.000Z'],
    ['week', '2024-05-01T10:20:00Z', '2024-04-28T00:00:00.000Z', '2024-05-05T00:00:00.000Z'],
    ['every 5 minutes', '2024-05-01T10:21:30Z', '2024-05-01T10:20:00.000Z', '2024-05-01T10:25:00.000Z'],
    ['every 15 minutes', '2024-05-01T10:21:30Z', '2024-05-01T10:15:00.000Z', '2024-05-01T10:30:00.000Z'],
  ] as const)('%s windows around %s: floor %s, ceil %s', (interval, t, floor, ceil) => {
    expect(floorBoundary(d(t), interval).toISOString()).toBe(floor);
    expect(ceilBoundary(d(t), interval).toISOString()).toBe(ceil);
  });

  it('first runs at the end of the first full interval, never for a window before start_at', () => {
    expect(firstWindowEnd(d('2024-05-01T10:20:00Z'), 'hour').toISOString()).toBe('2024-05-01T11:00:00.000Z');
    expect(firstWindowEnd(d('2024-05-01T11:00:00Z'), 'hour').toISOString()).toBe('2024-05-01T12:00:00.000Z');
    expect(firstWindowEnd(d('2024-05-01T10:20:00Z'), 'hour', d('2024-05-01T13:30:00Z')).toISOString()).toBe('2024-05-01T15:00:00.000Z');
  });

  it('covers a backfill range with aligned windows', () => {
    const w = windowsBetween(d('2024-05-01T10:30:00Z'), d('2024-05-01T13:00:00Z'), 'hour');
    expect(w.map((x) => x.start.toISOString().slice(11, 16))).toEqual(['10:00', '11:00', '12:00']);
  });

  it('counts the windows of a range by arithmetic, exactly as many as windowsBetween builds', () => {
    const ranges = [
      ['2024-05-01T10:30:00Z', '2024-05-01T13:00:00Z'],
      ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00.001Z'],
      ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z'],
      ['2024-05-01T10:21:30Z', '2024-05-01T10:20:00Z'],
      ['2024-02-28T23:59:59Z', '2024-03-31T01:00:00Z'],
      ['2023-12-30T12:00:00Z', '2024-01-07T00:00:00Z'],
      ['2024-04-27T23:59:59.999Z', '2024-05-12T00:00:00Z'],
    ];
    for (const interval of INTERVALS) {
      for (const [from, to] of ranges) expect([interval, from, to, windowCount(d(from!), d(to!), interval)]).toEqual([interval, from, to, windowsBetween(d(from!), d(to!), interval).length]);
    }
  });

  it('counts a range of millions of windows without building them', () => {
    const started = performance.now();
    // Year 1 to 9999 in 5-minute windows: about 1e9 windows, which windowsBetween could never hold.
    expect(windowCount(d('0001-01-01T00:00:00Z'), d('9999-12-31T23:59:59Z'), 'every 5 minutes')).toBe(1_051_792_992);
    expect(windowCount(d('2000-01-01T00:00:00Z'), d('2024-01-01T00:00:00Z'), 'day')).toBe(8766);
    expect(windowCount(d('2000-01-01T00:00:00Z'), d('2024-01-01T00:00:00Z'), 'week')).toBe(1254);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('export scheduling', () => {
  it('takes turns across organizations: every first run before any second run, order kept within each', () => {
    const hostile = Array.from({ length: 500 }, (_, i) => `a${i}`);
    const turns = takeTurns([hostile, ['b0'], ['c0', 'c1']]);
    expect(turns.slice(0, 6)).toEqual(['a0', 'b0', 'c0', 'a1', 'c1', 'a2']);
    expect(turns).toHaveLength(503);
    expect(turns.filter((x) => x.startsWith('a'))).toEqual(hostile);
    expect(takeTurns([])).toEqual([]);
  });

  it("leases a claimed run for longer than the exporter's invocation can live", () => {
    const exporter = workers.find((w) => w.name === 'run_batch_exports')!;
    expect(RUN_LEASE_MS).toBeGreaterThan(exporter.timeoutSeconds * 1000);
  });
});

describe('export window read slices', () => {
  const spans = (start: string, end: string) => readSlices(new Date(start), new Date(end)).map((x) => [x.start.toISOString(), x.end.getTime() - x.start.getTime()] as const);

  it('cuts a window into contiguous half-open slices covering it exactly: 5 minutes, at most 48', () => {
    for (const [start, end, count] of [
      ['2024-05-01T10:00:00Z', '2024-05-01T10:05:00Z', 1],
      ['2024-05-01T10:00:00Z', '2024-05-01T11:00:00Z', 12],
      ['2024-05-01T00:00:00Z', '2024-05-02T00:00:00Z', 48],
      ['2024-04-28T00:00:00Z', '2024-05-05T00:00:00Z', 48],
    ] as const) {
      const slices = readSlices(new Date(start), new Date(end));
      expect(slices).toHaveLength(count);
      expect(slices[0]!.start.toISOString()).toBe(new Date(start).toISOString());
      expect(slices.at(-1)!.end.toISOString()).toBe(new Date(end).toISOString());
      slices.slice(1).forEach((x, i) => expect(x.start.getTime()).toBe(slices[i]!.end.getTime()));
    }
    expect(spans('2024-05-01T10:00:00Z', '2024-05-01T11:00:00Z')[11]).toEqual(['2024-05-01T10:55:00.000Z', 300_000]);
    expect(spans('2024-05-01T00:00:00Z', '2024-05-02T00:00:00Z')[1]).toEqual(['2024-05-01T00:30:00.000Z', 1_800_000]);
    expect(readSlices(new Date('2024-05-01T10:00:00Z'), new Date('2024-05-01T10:00:00Z'))).toEqual([]);
  });
});

describe('export files', () => {
  const rows = [{ uuid: 'u1', event: 'a,b', properties: { x: 1 } }, { uuid: 'u2', event: 'c"d', properties: {} }];

  it('writes JSON Lines with nested objects intact', () => {
    const { body, extension } = encodeRows(rows, ['uuid', 'event', 'properties'], 'JSONLines', 'none');
    expect(extension).toBe('jsonl');
    expect(body.toString().trim().split('\n').map((l) => JSON.parse(l))).toEqual(rows);
  });

  it('writes CSV with quoting and nested values as JSON', () => {
    const { body } = encodeRows(rows, ['uuid', 'event', 'properties'], 'CSV', 'none');
    expect(body.toString()).toBe('uuid,event,properties\r\nu1,"a,b","{""x"":1}"\r\nu2,"c""d",{}\r\n');
  });

  it('compresses with gzip and brotli, naming the file accordingly', () => {
    const gz = encodeRows(rows, [], 'JSONLines', 'gzip');
    expect(gz.extension).toBe('jsonl.gz');
    expect(gunzipSync(gz.body).toString()).toBe(encodeRows(rows, [], 'JSONLines', 'none').body.toString());
    const br = encodeRows(rows, ['uuid'], 'CSV', 'brotli');
    expect(br.extension).toBe('csv.br');
    expect(brotliDecompressSync(br.body).toString()).toBe('uuid\r\nu1\r\nu2\r\n');
  });

  it('renders prefix variables and keeps keys deterministic per window', () => {
    const w = { start: d('2024-05-01T10:00:00Z'), end: d('2024-05-01T11:00:00Z') };
    expect(renderPrefix('exports/{year}/{month}/{day}/{hour}/{table}', w, 'events')).toBe('exports/2024/05/01/10/events');
    expect(objectKey('exports/{year}-{month}/', w, 'events', 'jsonl.gz')).toBe('exports/2024-05/2024-05-01T10:00:00.000Z-2024-05-01T11:00:00.000Z.jsonl.gz');
    expect(objectKey('', w, 'events', 'csv')).toBe('2024-05-01T10:00:00.000Z-2024-05-01T11:00:00.000Z.csv');
  });
});

describe('export hogql_query', () => {
  const source = { columns: { uuid: 'u1', event: 'signup' }, properties: { $browser: 'Chrome', 'odd key': 1 }, person_properties: { email: 'a@b.c' } };

  it('selects columns, event and person properties, with aliases', () => {
    const fields = parseExportQuery("SELECT uuid, event AS name, properties.$browser AS browser, properties['odd key'], person.properties.email FROM events");
    expect(fields.map((f) => f.alias)).toEqual(['uuid', 'name', 'browser', 'odd key', 'email']);
    expect(fields.map((f) => f.read(source))).toEqual(['u1', 'signup', 'Chrome', 1, 'a@b.c']);
  });

  it.each([
    'SELECT * FROM events',
    'SELECT uuid FROM persons',
    'SELECT uuid FROM events WHERE event = 1',
    'SELECT uuid FROM events JOIN persons',
    'SELECT (SELECT 1) FROM events',
    'SELECT nope FROM events',
    'SELECT uuid, event AS uuid FROM events',
    'DROP TABLE events',
  ])('refuses %s with 400 on hogql_query', (q) => {
    const error = (() => {
      try {
        parseExportQuery(q);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).attr).toBe('hogql_query');
  });
});
