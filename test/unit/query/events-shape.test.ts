import { describe, expect, it } from 'vitest';
import {
  checkAnswerBytes,
  checkGroupBy,
  columnTypes,
  compareEvents,
  countGroups,
  eventRow,
  type ExplorerEvent,
  groupRow,
  MAX_EVENTS_RANGE_DAYS,
  orderGroups,
  pageOf,
  parseInstant,
  parseOrder,
  parsePersonId,
  parseSelect,
  refuseUnsupportedFields,
  resolveWindow,
} from '#shared/domain/query/events-shape.ts';
import { ValidationError } from '#shared/errors.ts';

const ctx = { tz: 'UTC', now: Date.parse('2024-04-20T12:34:56.789Z'), weekStartDay: 0 as const };

function refused(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error('not refused');
}

const ev = (over: Partial<ExplorerEvent> = {}): ExplorerEvent => ({
  uuid: '0190f000-0000-7000-8000-000000000001',
  event: '$pageview',
  distinct_id: 'ada',
  properties: { $browser: 'Chrome', amount: 3, flag: true },
  timestamp: '2024-04-20T10:00:00.000Z',
  inserted_at: '2024-04-20T10:00:01.000Z',
  ...over,
});

describe('EventsQuery select', () => {
  it('reads the supported columns, strips "-- label" and defaults to *', () => {
    expect(parseSelect(undefined).map((c) => c.kind)).toEqual(['star']);
    expect(parseSelect([]).map((c) => c.kind)).toEqual(['star']);
    const cols = parseSelect(['event', 'timestamp -- Time', 'person', 'properties.$browser', 'count( )', 'uuid']);
    expect(cols.map((c) => c.kind)).toEqual(['event', 'timestamp', 'person', 'property', 'count', 'uuid']);
    expect(cols[1]!.label).toBe('timestamp -- Time');
    expect(cols[3]).toMatchObject({ key: '$browser' });
    expect(parseSelect(["properties.'my key'"])[0]).toMatchObject({ key: 'my key' });
  });

  it('refuses any other expression on its own entry, naming what is supported', () => {
    const e = refused(() => parseSelect(['event', 'toDate(timestamp)']));
    expect(e.attr).toBe('query__select__1');
    expect(e.message).toContain('properties.<key>');
  });

  it('count() groups by the others, which cannot be * or uuid', () => {
    expect(() => checkGroupBy(parseSelect(['event', 'count()']))).not.toThrow();
    expect(refused(() => checkGroupBy(parseSelect(['count()', '*']))).attr).toBe('query__select__1');
  });
});

describe('EventsQuery order', () => {
  it('defaults to timestamp DESC, or count() DESC when aggregating', () => {
    expect(parseOrder(undefined, false)).toEqual({ by: 'timestamp', descending: true });
    expect(parseOrder([], true)).toEqual({ by: 'count', descending: true });
    expect(parseOrder(['timestamp ASC'], false)).toEqual({ by: 'timestamp', descending: false });
    expect(parseOrder(['count() asc'], true)).toEqual({ by: 'count', descending: false });
  });

  it('refuses other orders naming the supported ones', () => {
    const e = refused(() => parseOrder(['properties.$browser DESC'], false));
    expect(e.attr).toBe('query__orderBy__0');
    expect(e.message).toContain('"timestamp DESC" or "timestamp ASC"');
    expect(refused(() => parseOrder(['timestamp DESC'], true)).message).toContain('count() DESC');
    expect(refused(() => parseOrder(['timestamp DESC', 'event'], false)).attr).toBe('query__orderBy__1');
  });
});

describe('EventsQuery after / before', () => {
  it('reads relative dates without truncation, as PostHog relative_date_parse', () => {
    expect(parseInstant('-24h', ctx)).toBe(ctx.now - 86_400_000);
    expect(parseInstant('-7d', ctx)).toBe(ctx.now - 7 * 86_400_000);
    expect(parseInstant('-30M', ctx)).toBe(ctx.now - 30 * 60_000);
    expect(new Date(parseInstant('-1m', ctx)!).toISOString()).toBe('2024-03-20T12:34:56.789Z');
    expect(new Date(parseInstant('-1dStart', ctx)!).toISOString()).toBe('2024-04-19T00:00:00.000Z');
    expect(parseInstant('2024-04-01T10:00:00Z', ctx)).toBe(Date.parse('2024-04-01T10:00:00Z'));
    expect(parseInstant('2024-04-01', { ...ctx, tz: 'Europe/Paris' })).toBe(Date.parse('2024-03-31T22:00:00Z'));
    expect(parseInstant('yesterday', ctx)).toBeNull();
  });

  it('defaults to the last 24 hours up to now + 5 s, and caps the range', () => {
    expect(resolveWindow(undefined, undefined, ctx, undefined)).toEqual({
      after: ctx.now - 86_400_000,
      before: ctx.now + 5_000,
    });
    expect(resolveWindow('all', undefined, ctx, Date.parse('2024-04-01T00:00:00Z')).after).toBe(
      Date.parse('2024-04-01T00:00:00Z') - 1,
    );
    const wide = refused(() => resolveWindow('-400d', undefined, ctx, undefined));
    expect(wide.attr).toBe('query__after');
    expect(wide.message).toContain(String(MAX_EVENTS_RANGE_DAYS));
    expect(refused(() => resolveWindow(undefined, 'soon', ctx, undefined)).attr).toBe('query__before');
  });

  it('refuses a bound that resolves to NaN or outside years 0001-9999, naming it (the 366-day check cannot see NaN)', () => {
    expect(parseInstant('-999999y', ctx)).toBeNaN();
    for (const raw of ['-999999y', '-9999999999999999s', '-99999999999999999999d']) {
      const after = refused(() => resolveWindow(raw, undefined, ctx, undefined));
      expect(after.attr).toBe('query__after');
      expect(after.message).toContain('0001-01-01 and 9999-12-31');
      expect(refused(() => resolveWindow(raw, raw, ctx, undefined)).attr).toBe('query__before');
    }
  });
});

describe('EventsQuery rows', () => {
  const person = (distinct_id: string) => ({ distinct_id });

  it('shapes * like PostHog and properties as text (null when absent)', () => {
    const row = eventRow(
      parseSelect(['*', 'properties.amount', 'properties.flag', 'properties.nope', 'person']),
      ev(),
      7,
      person,
    );
    expect(row[0]).toEqual({
      uuid: ev().uuid,
      event: '$pageview',
      properties: ev().properties,
      timestamp: '2024-04-20T10:00:00.000Z',
      team_id: 7,
      distinct_id: 'ada',
      elements_chain: '',
      created_at: '2024-04-20T10:00:01.000Z',
      person_mode: 'full',
    });
    expect(row.slice(1)).toEqual(['3', 'true', null, { distinct_id: 'ada' }]);
  });

  it('orders by time then uuid, either way', () => {
    const a = ev({ timestamp: '2024-04-20T10:00:00.000Z', uuid: 'a' });
    const b = ev({ timestamp: '2024-04-20T10:00:00.000Z', uuid: 'b' });
    const c = ev({ timestamp: '2024-04-20T11:00:00.000Z', uuid: 'a' });
    expect([a, c, b].sort(compareEvents(true))).toEqual([c, b, a]);
    expect([c, b, a].sort(compareEvents(false))).toEqual([a, b, c]);
  });

  it('pages with hasMore from one extra row', () => {
    expect(pageOf([1, 2, 3, 4], 2, 1)).toEqual({ results: [2, 3], hasMore: true });
    expect(pageOf([1, 2, 3], 2, 1)).toEqual({ results: [2, 3], hasMore: false });
  });
});

describe('EventsQuery count()', () => {
  const events = [
    { event: '$pageview', distinct_id: 'ada', t: 1, properties: { $browser: 'Chrome' } },
    { event: '$pageview', distinct_id: 'bob', t: 2, properties: { $browser: 'Chrome' } },
    { event: '$pageview', distinct_id: 'ada', t: 3, properties: { $browser: 'Safari' } },
    { event: 'signed up', distinct_id: 'ada', t: 4, properties: {} },
  ];

  it('groups by the other columns and orders by count, ties by value', () => {
    const columns = parseSelect(['event', 'count()']);
    const rows = orderGroups(countGroups(columns, events), true).map((g) =>
      groupRow(columns, g, (d) => ({ distinct_id: d })),
    );
    expect(rows).toEqual([
      ['$pageview', 3],
      ['signed up', 1],
    ]);
    const byBrowser = parseSelect(['count()', 'properties.$browser']);
    expect(
      orderGroups(countGroups(byBrowser, events), false).map((g) =>
        groupRow(byBrowser, g, () => ({ distinct_id: '' })),
      ),
    ).toEqual([
      [1, 'Safari'],
      [1, null],
      [2, 'Chrome'],
    ]);
  });

  it('count() alone is one row; person groups by distinct id then shows the person', () => {
    expect(countGroups(parseSelect(['count()']), events).map((g) => g.count)).toEqual([4]);
    const columns = parseSelect(['person', 'count()']);
    const rows = orderGroups(countGroups(columns, events), true).map((g) =>
      groupRow(columns, g, (d) => ({ distinct_id: d, uuid: `u-${d}`, created_at: '', properties: {} })),
    );
    expect(rows[0]).toEqual([{ distinct_id: 'ada', uuid: 'u-ada', created_at: '', properties: {} }, 3]);
  });

  it('reports PostHog-like types', () => {
    expect(columnTypes(parseSelect(['event', 'count()', 'properties.x']))).toEqual([
      'String',
      'UInt64',
      'Nullable(String)',
    ]);
  });
});

describe('EventsQuery fields not applied', () => {
  it('refuses fields that would change the result, naming them', () => {
    expect(refused(() => refuseUnsupportedFields({ where: ['1 = 1'] })).attr).toBe('query__where');
    expect(refused(() => refuseUnsupportedFields({ fixedProperties: [{ key: 'a' }] })).attr).toBe(
      'query__fixedProperties',
    );
    expect(refused(() => refuseUnsupportedFields({ actionId: 3 })).attr).toBe('query__actionId');
    expect(() => refuseUnsupportedFields({ where: [], filterTestAccounts: false, modifiers: {} })).not.toThrow();
  });

  it('refuses an answer over 5 MiB, saying its size', () => {
    expect(() => checkAnswerBytes(5 * 1024 * 1024)).not.toThrow();
    const e = refused(() => checkAnswerBytes(6 * 1024 * 1024));
    expect(e.attr).toBe('query__limit');
    expect(e.message).toContain('6,144 KiB; at most 5,120 KiB');
  });

  it('personId is a person id (integer)', () => {
    expect(parsePersonId('12')).toBe(12);
    expect(parsePersonId(undefined)).toBeUndefined();
    expect(refused(() => parsePersonId('not-an-id')).attr).toBe('query__personId');
  });
});
