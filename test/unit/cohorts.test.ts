import { describe, expect, it } from 'vitest';
import {
  MAX_BEHAVIOURAL_WINDOW_DAYS,
  MAX_COHORT_DEPTH,
  MAX_COHORT_LEAVES,
  matchesCohort,
  parseCohortFilters,
  referencesLoop,
  type CohortNode,
} from '#shared/domain/cohort-definitions.ts';
import { csvIdentifiers, MAX_STATIC_ROWS } from '#shared/domain/cohorts.ts';
import { ParseError, ValidationError } from '#shared/errors.ts';
import { MAX_MULTIPART_PARTS, parseMultipart } from '#shared/http/multipart.ts';

const NOW = Date.parse('2024-06-01T00:00:00Z');
const parse = (...values: unknown[]) => parseCohortFilters({ properties: { type: 'AND', values } }, NOW);
const person = (properties: Record<string, unknown>, extra: Partial<Parameters<typeof matchesCohort>[1]> = {}) => ({
  properties,
  inCohort: () => false,
  eventCount: () => 0,
  ...extra,
});
function refusal(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  throw new Error('not refused');
}

describe('cohort definitions', () => {
  it('person leaves take every persons-filter operator (one implementation) and RE2 regexes', () => {
    const cases: [unknown, Record<string, unknown>, boolean][] = [
      [{ key: 'plan', value: 'pro', type: 'person' }, { plan: 'pro' }, true],
      [{ key: 'plan', value: 'pro', operator: 'is_not', type: 'person' }, { plan: 'pro' }, false],
      [{ key: 'email', value: 'ACME', operator: 'icontains', type: 'person' }, { email: 'a@acme.io' }, true],
      [{ key: 'email', value: '^a@', operator: 'regex', type: 'person' }, { email: 'a@acme.io' }, true],
      [{ key: 'n', value: 5, operator: 'gt', type: 'person' }, { n: 6 }, true],
      [{ key: 'n', value: [1, 3], operator: 'between', type: 'person' }, { n: 4 }, false],
      [{ key: 'gone', operator: 'is_not_set', type: 'person' }, {}, true],
      [{ key: 'd', value: '2024-01-01', operator: 'is_date_after', type: 'person' }, { d: '2024-02-01' }, true],
    ];
    for (const [leaf, props, expected] of cases) expect(matchesCohort(parse(leaf).root, person(props))).toBe(expected);
    // A backtracking bomb is linear under RE2.
    const bomb = parse({ key: 'x', value: '(a+)+$', operator: 'regex', type: 'person' });
    expect(matchesCohort(bomb.root, person({ x: `${'a'.repeat(5000)}!` }))).toBe(false);
    expect(() => parse({ key: 'x', value: '(?<=a)b', operator: 'regex', type: 'person' })).toThrow(ValidationError);
  });

  it('cohort leaves (with negation), OR groups and behavioural counts', () => {
    const def = parseCohortFilters(
      {
        properties: {
          type: 'OR',
          values: [
            { type: 'AND', values: [{ type: 'cohort', key: 'id', value: 7, negation: true }] },
            {
              type: 'behavioral',
              value: 'performed_event_multiple',
              key: 'bought',
              event_type: 'events',
              operator: 'exact',
              operator_value: 2,
              time_value: 2,
              time_interval: 'week',
            },
          ],
        },
      },
      NOW,
    );
    expect(def.references).toEqual([7]);
    expect(def.events).toHaveLength(1);
    expect(def.events[0]!.windowMs).toBe(14 * 86_400_000);
    expect(matchesCohort(def.root, person({}, { inCohort: () => false }))).toBe(true);
    expect(matchesCohort(def.root, person({}, { inCohort: () => true, eventCount: () => 2 }))).toBe(true);
    expect(matchesCohort(def.root, person({}, { inCohort: () => true, eventCount: () => 3 }))).toBe(false);
  });

  it('refuses the behavioural leaves it does not evaluate, naming them, and bad windows', () => {
    for (const value of ['performed_event_first_time', 'performed_event_sequence', 'stopped_performing_event']) {
      const e = refusal(() => parse({ type: 'behavioral', value, key: 'x', time_value: 1, time_interval: 'day' }));
      expect(e.detail).toContain(value);
    }
    const tooLong = refusal(() =>
      parse({
        type: 'behavioral',
        value: 'performed_event',
        key: 'x',
        time_value: MAX_BEHAVIOURAL_WINDOW_DAYS + 1,
        time_interval: 'day',
      }),
    );
    expect(tooLong.detail).toContain(`${MAX_BEHAVIOURAL_WINDOW_DAYS} days`);
    expect(() =>
      parse({ type: 'behavioral', value: 'performed_event', key: 'x', explicit_datetime: '2024-01-01' }),
    ).toThrow(ValidationError);
    expect(refusal(() => parse({ type: 'group', key: 'x', value: 1 })).attr).toBe(
      'filters__properties__values__0__type',
    );
  });

  it('caps leaves and depth', () => {
    const leaves = Array.from({ length: MAX_COHORT_LEAVES + 1 }, (_, i) => ({
      key: `k${i}`,
      value: 1,
      type: 'person',
    }));
    expect(refusal(() => parse(...leaves)).detail).toContain(`${MAX_COHORT_LEAVES}`);
    expect(() => parse(...leaves.slice(0, MAX_COHORT_LEAVES))).not.toThrow();
    let deep: unknown = { key: 'k', value: 1, type: 'person' };
    for (let i = 0; i < MAX_COHORT_DEPTH; i++) deep = { type: 'AND', values: [deep] };
    expect(() => parseCohortFilters({ properties: deep }, NOW)).not.toThrow();
    expect(refusal(() => parseCohortFilters({ properties: { type: 'AND', values: [deep] } }, NOW)).detail).toContain(
      `${MAX_COHORT_DEPTH} groups deep`,
    );
    expect(() => parseCohortFilters({ properties: { type: 'AND', values: [] } }, NOW)).toThrow(ValidationError);
  });

  it('finds reference loops', () => {
    const graph: Record<number, number[]> = { 1: [2], 2: [3], 3: [], 4: [5], 5: [4] };
    expect(referencesLoop(1, (id) => graph[id] ?? [])).toBe(false);
    expect(referencesLoop(4, (id) => graph[id] ?? [])).toBe(true);
    expect(referencesLoop(3, (id) => (id === 3 ? [1] : (graph[id] ?? [])))).toBe(true);
  });

  it('an empty group matches everyone', () => {
    const root: CohortNode = { kind: 'group', type: 'OR', values: [] };
    expect(matchesCohort(root, person({}))).toBe(true);
  });
});

describe('static cohort CSV (PostHog rules)', () => {
  it('a header names the column; one bare column is distinct ids; several without one are refused', () => {
    expect(csvIdentifiers('name,Distinct ID\nA,d1\nB,"d,2"\n')).toEqual({
      column: 'distinct_id',
      values: ['d1', 'd,2'],
    });
    expect(csvIdentifiers('\uFEFFperson_id\r\n12\r\n\r\n13\r\n')).toEqual({
      column: 'person_id',
      values: ['12', '13'],
    });
    expect(csvIdentifiers('EMAIL\na@b.c\n')).toEqual({ column: 'email', values: ['a@b.c'] });
    expect(csvIdentifiers('u1\nu2\n')).toEqual({ column: 'distinct_id', values: ['u1', 'u2'] });
    expect(refusal(() => csvIdentifiers('a,b\n1,2\n')).attr).toBe('csv');
    expect(refusal(() => csvIdentifiers('')).attr).toBe('csv');
    const many = Array.from({ length: MAX_STATIC_ROWS + 1 }, (_, i) => `d${i}`).join('\n');
    expect(refusal(() => csvIdentifiers(many)).detail).toContain(`${MAX_STATIC_ROWS} rows`);
  });

  it('a malformed file is a 400 naming the line (csv-parse): a quote never closed, a stray quote, a row of another width', () => {
    expect(refusal(() => csvIdentifiers('distinct_id\r\nu1\r\n\r\n"u2\r\nu3\r\n')).detail).toBe(
      'The CSV is malformed: the quoted field opened on line 4 is never closed (the file ends inside it).',
    );
    expect(refusal(() => csvIdentifiers('distinct_id\nu1\n"u2"x\n')).detail).toMatch(
      /^The CSV is malformed on line 3: Invalid Closing Quote/,
    );
    const ragged = refusal(() => csvIdentifiers('distinct_id,x\nu1,a\nu2,b,c\n'));
    expect(ragged).toMatchObject({
      attr: 'csv',
      detail: 'The CSV is malformed on line 3: 3 cells where its first row has 2.',
    });
    // Rows of blanks are skipped whatever their width; a quoted line break stays inside its cell.
    expect(csvIdentifiers('distinct_id,x\n  \nu1,"a\nb"\n,\n')).toEqual({ column: 'distinct_id', values: ['u1'] });
  });
});

describe('multipart bodies', () => {
  const form = (parts: string[], boundary = 'XyZ') =>
    Buffer.from(`${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('')}--${boundary}--\r\n`);
  it('reads fields and files as text', async () => {
    const body = form([
      'Content-Disposition: form-data; name="name"\r\n\r\nPaying',
      'Content-Disposition: form-data; name="csv"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\ndistinct_id\r\nu1\r\n',
    ]);
    expect(await parseMultipart(body, 'multipart/form-data; boundary=XyZ')).toEqual({
      name: 'Paying',
      csv: 'distinct_id\r\nu1\r\n',
    });
    expect((await parseMultipart(body, 'multipart/form-data; boundary="XyZ"')).name).toBe('Paying');
  });
  it('refuses a missing boundary, an unterminated part and too many parts', async () => {
    await expect(parseMultipart(Buffer.from('x'), 'multipart/form-data')).rejects.toThrow(ParseError);
    await expect(
      parseMultipart(
        Buffer.from('--XyZ\r\nContent-Disposition: form-data; name="a"\r\n\r\nno end'),
        'multipart/form-data; boundary=XyZ',
      ),
    ).rejects.toThrow(ParseError);
    const parts = Array.from(
      { length: MAX_MULTIPART_PARTS + 1 },
      (_, i) => `Content-Disposition: form-data; name="f${i}"\r\n\r\nv`,
    );
    await expect(parseMultipart(form(parts), 'multipart/form-data; boundary=XyZ')).rejects.toThrow(/more than/);
    // Exactly at the cap is a form.
    expect(Object.keys(await parseMultipart(form(parts.slice(1)), 'multipart/form-data; boundary=XyZ'))).toHaveLength(
      MAX_MULTIPART_PARTS,
    );
  });
});
