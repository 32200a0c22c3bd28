import { describe, expect, it } from 'vitest';
import {
  checkAggregation,
  checkAnswerBytes,
  compareEvents,
  compileColumns,
  compileGrouping,
  compileOrderKey,
  compileWhere,
  eventReader,
  eventValues,
  type ExplorerEvent,
  Groups,
  isAggregation,
  isTimeOrder,
  MAX_EVENTS_RANGE_DAYS,
  pageOf,
  parseLimit,
  parseInstant,
  parseOrder,
  parsePersonId,
  parseSelect,
  parseWhere,
  propertyKeysOf,
  readsPerson,
  refuseUnsupportedFields,
  resolveWindow,
  shapeRows,
} from '#shared/domain/query/events-shape.ts';
import { HogDateTime } from '#shared/hogql/index.ts';
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

const evalCtx = { timezone: 'UTC', now: new Date(ctx.now) };

describe('EventsQuery select', () => {
  it('takes * and person as PostHog does, anything else as a HogQL expression; labels from AS', () => {
    expect(parseSelect(undefined).map((c) => c.kind)).toEqual(['star']);
    expect(parseSelect([]).map((c) => c.kind)).toEqual(['star']);
    const cols = parseSelect([
      'event',
      'timestamp -- Time',
      'person',
      "concat(properties.$os, ' ', event) AS os",
      'count( )',
    ]);
    expect(cols.map((c) => c.kind)).toEqual(['expr', 'expr', 'person', 'expr', 'expr']);
    expect(cols.map((c) => c.label)).toEqual(['event', 'timestamp -- Time', 'person', 'os', 'count( )']);
    expect(cols.map((c) => c.kind === 'expr' && c.aggregate)).toEqual([false, false, false, false, true]);
    expect(isAggregation(cols)).toBe(true);
    expect(isAggregation(cols.slice(0, 4))).toBe(false);
  });

  it('refuses a bad expression on its own entry', () => {
    expect(refused(() => parseSelect(['event', 'nosuchfunction(event)'])).attr).toBe('query__select__1');
    expect(refused(() => parseSelect(['event', 'event', 'nosuchfield'])).attr).toBe('query__select__2');
    expect(refused(() => parseSelect(['(event'])).attr).toBe('query__select__0');
  });

  it('where: each entry checked on its own attr; aggregates are HAVING', () => {
    const where = parseWhere(['toHour(timestamp) >= 9', 'count() > 2']);
    expect(where.map((w) => [w.attr, w.aggregate])).toEqual([
      ['query__where__0', false],
      ['query__where__1', true],
    ]);
    expect(refused(() => parseWhere(['1 = 1', 'toHour(nope) > 1'])).attr).toBe('query__where__1');
    expect(parseWhere(undefined)).toEqual([]);
    const columns = parseSelect(['toHour(timestamp) AS hour', 'count() AS n']);
    const [byHour, byCount] = parseWhere(['hour >= 9', 'n > 2'], columns);
    expect(byHour!.fields).toEqual([['timestamp']]);
    expect([byHour!.aggregate, byCount!.aggregate]).toEqual([false, true]);
    expect(refused(() => parseWhere(['hour >= 9'])).attr).toBe('query__where__0');
  });

  it('aggregating refuses *, uuid, and HAVING without an aggregate column', () => {
    const agg = parseSelect(['count()', '*']);
    expect(refused(() => checkAggregation(agg, [], [], true)).attr).toBe('query__select__1');
    const uuid = parseSelect(['count()']);
    const order = parseOrder(['uuid'], parseSelect(['uuid', 'count()']), true);
    expect(refused(() => checkAggregation(parseSelect(['uuid', 'count()']), [], order, true)).attr).toBe(
      'query__select__0',
    );
    expect(refused(() => checkAggregation(uuid, parseWhere(["uuid = 'x'"]), [], true)).attr).toBe('query__where__0');
    const rows = parseSelect(['event']);
    expect(refused(() => checkAggregation(rows, parseWhere(['count() > 1']), [], false)).attr).toBe('query__where__0');
    expect(() => checkAggregation(rows, parseWhere(["event = 'a'"]), [], false)).not.toThrow();
  });

  it('knows which expressions read the person and which properties they name', () => {
    const cols = parseSelect(['person.properties.email', 'properties.$a.b', '$session_id', 'elements_chain']);
    const exprs = cols.flatMap((c) => (c.kind === 'expr' ? [c] : []));
    expect(readsPerson(exprs)).toBe(true);
    expect(readsPerson(exprs.slice(1))).toBe(false);
    expect(propertyKeysOf(exprs)).toEqual(['$a', '$session_id', '$elements_chain']);
  });
});

describe('EventsQuery order', () => {
  const rows = parseSelect(['event', 'timestamp']);
  const counted = parseSelect(['event', 'sum(properties.n) AS total', 'count()']);
  const summed = parseSelect(['event', 'avg(properties.n)', 'sum(properties.n)']);
  const text = (terms: ReturnType<typeof parseOrder>) =>
    terms.map(
      (t) =>
        `${JSON.stringify(t.expr.kind === 'call' ? t.expr.name : t.expr.kind === 'field' ? t.expr.chain : t.expr.kind)} ${t.descending ? 'DESC' : 'ASC'}`,
    );

  it("defaults as PostHog's runner: timestamp DESC for rows; count() DESC, else the first aggregate DESC", () => {
    expect(text(parseOrder(undefined, rows, false))).toEqual(['["timestamp"] DESC']);
    expect(text(parseOrder([], counted, true))).toEqual(['"count" DESC']);
    expect(text(parseOrder(null, summed, true))).toEqual(['"avg" DESC']);
    expect(isTimeOrder(parseOrder(undefined, rows, false))).toBe(true);
    expect(isTimeOrder(parseOrder(['timestamp ASC'], rows, false))).toBe(true);
  });

  it('takes any expression for rows, several, each its own direction; an alias names its column', () => {
    const terms = parseOrder(['properties.$browser DESC', 'toHour(timestamp)', 'timestamp desc'], rows, false);
    expect(text(terms)).toEqual(['["properties","$browser"] DESC', '"toHour" ASC', '["timestamp"] DESC']);
    expect(isTimeOrder(terms)).toBe(false);
    expect(text(parseOrder(['total DESC'], counted, true))).toEqual(['"sum" DESC']);
    const grouped = parseOrder(['event'], counted, true);
    expect(grouped[0]!.column).toBe(0);
  });

  it('refuses an aggregate order of rows, and an order of groups that is neither aggregate nor group column', () => {
    expect(refused(() => parseOrder(['timestamp', 'count()'], rows, false)).attr).toBe('query__orderBy__1');
    const e = refused(() => parseOrder(['count()', 'distinct_id'], counted, true));
    expect(e.attr).toBe('query__orderBy__1');
    expect(e.message).toContain('grouped by');
    expect(refused(() => parseOrder(['timestamp', 'nope('], rows, false)).attr).toBe('query__orderBy__1');
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
  const asFacts = (e: ExplorerEvent) => ({ ...e, t: Date.parse(e.timestamp) });
  const values = (select: string[], e: ExplorerEvent) => {
    const columns = parseSelect(select);
    const cells = compileColumns(columns, evalCtx);
    return shapeRows(columns, [eventValues(columns, cells, e, 7, eventReader(asFacts(e), 'UTC', undefined), person)]);
  };

  it('shapes * like PostHog; a bare property as text (null when absent), a bare timestamp as ISO UTC', () => {
    const { results, types } = values(
      ['*', 'properties.amount', 'properties.flag', 'properties.nope', 'person', 'timestamp'],
      ev(),
    );
    expect(results[0]![0]).toEqual({
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
    expect(results[0]!.slice(1)).toEqual(['3', 'true', null, { distinct_id: 'ada' }, '2024-04-20T10:00:00.000Z']);
    expect(types.slice(1)).toEqual([
      'Nullable(String)',
      'Nullable(String)',
      'Nullable(String)',
      'String',
      "DateTime64(6, 'UTC')",
    ]);
  });

  it('evaluates expressions on the event, typed from the function or the values', () => {
    const { results, types } = values(
      [
        "concat(event, ' ', properties.$browser)",
        'properties.amount * 2',
        'toStartOfHour(timestamp)',
        'toFloat(properties.amount)',
      ],
      ev(),
    );
    expect(results[0]).toEqual(['$pageview Chrome', 6, '2024-04-20T10:00:00+00:00', 3]);
    expect(types).toEqual(['String', 'Int64', "DateTime64(6, 'UTC')", 'Float64']);
  });

  it('reads every field of an event and of its person', () => {
    const e = { ...asFacts(ev()), properties: { $session_id: 's1', $elements_chain: 'a:b', nested: { k: [1] } } };
    const p = { uuid: 'p-uuid', created_at: '2024-01-01T00:00:00Z', properties: { email: 'a@b' }, distinct_id: 'ada' };
    const read = eventReader(e, 'Europe/Paris', p);
    expect(read(['event'])).toBe('$pageview');
    expect(read(['uuid'])).toBe(ev().uuid);
    expect(read(['timestamp'])).toEqual(new HogDateTime(Date.parse('2024-04-20T10:00:00Z'), 'Europe/Paris'));
    expect(read(['$session_id'])).toBe('s1');
    expect(read(['elements_chain'])).toBe('a:b');
    expect(read(['properties', 'nested'])).toBe('{"k":[1]}');
    expect(read(['person_id'])).toBe('p-uuid');
    expect(read(['person', 'properties', 'email'])).toBe('a@b');
    expect(read(['person', 'created_at'])).toEqual(new HogDateTime(Date.parse('2024-01-01T00:00:00Z'), 'Europe/Paris'));
    const alone = eventReader(e, 'UTC', { distinct_id: 'ada' });
    expect([alone(['person_id']), alone(['person', 'properties', 'email'])]).toEqual([null, null]);
  });

  it('where entries are ANDed; an order key per row', () => {
    const where = compileWhere(parseWhere(['toHour(timestamp) >= 9', "properties.$browser ILIKE 'chr%'"]), evalCtx);
    const read = (over: Partial<ExplorerEvent>) => eventReader(asFacts(ev(over)), 'UTC', undefined);
    expect(where(read({}))).toBe(true);
    expect(where(read({ timestamp: '2024-04-20T08:00:00.000Z' }))).toBe(false);
    expect(where(read({ properties: { $browser: 'Safari' } }))).toBe(false);
    expect(compileWhere([], evalCtx)(read({}))).toBe(true);
    const key = compileOrderKey(
      parseOrder(['properties.amount DESC', 'event'], parseSelect(['event']), false),
      evalCtx,
    );
    expect(key(read({}))).toEqual([3, '$pageview']);
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

  it("reads a limit of 0 as none given (PostHog's paginator), so its page is the default one", () => {
    expect(parseLimit(0, undefined)).toEqual({ limit: 100, offset: 0 });
    expect(parseLimit(undefined, 3)).toEqual({ limit: 100, offset: 3 });
    expect(parseLimit(7, 0)).toEqual({ limit: 7, offset: 0 });
  });
});

describe('EventsQuery aggregates', () => {
  const events = [
    { event: '$pageview', distinct_id: 'ada', t: 1, properties: { $browser: 'Chrome', price: '2' } },
    { event: '$pageview', distinct_id: 'bob', t: 2, properties: { $browser: 'Chrome', price: '4' } },
    { event: '$pageview', distinct_id: 'ada', t: 3, properties: { $browser: 'Safari', price: '9' } },
    { event: 'signed up', distinct_id: 'ada', t: 4, properties: {} },
  ];

  function run(
    select: string[],
    { where = [] as string[], orderBy = undefined as string[] | undefined, max = 100 } = {},
  ) {
    const columns = parseSelect(select);
    const conditions = parseWhere(where);
    const order = parseOrder(orderBy, columns, true);
    checkAggregation(columns, conditions, order, true);
    const groups = new Groups(compileGrouping(columns, conditions, order, evalCtx), max);
    const keep = compileWhere(conditions, evalCtx);
    for (const e of events) {
      const read = eventReader(e, 'UTC', undefined);
      if (keep(read)) groups.add(read);
    }
    return shapeRows(columns, groups.rows());
  }

  it('groups by the other columns, count() DESC by default, ties by the group values', () => {
    expect(run(['event', 'count()']).results).toEqual([
      ['$pageview', 3],
      ['signed up', 1],
    ]);
    expect(run(['count()', 'properties.$browser'], { orderBy: ['count() ASC'] }).results).toEqual([
      [1, 'Safari'],
      [1, null],
      [2, 'Chrome'],
    ]);
  });

  it('aggregates expressions per group, ordered by the first aggregate by default; HAVING filters groups', () => {
    const { results, types } = run(['properties.$browser', 'avg(toFloat(properties.price))', 'uniq(distinct_id)'], {
      where: ["event = '$pageview'"],
    });
    expect(results).toEqual([
      ['Safari', 9, 1],
      ['Chrome', 3, 2],
    ]);
    expect(types).toEqual(['Nullable(String)', 'Float64', 'UInt64']);
    expect(run(['distinct_id', 'count()'], { where: ['count() > 1'] }).results).toEqual([['ada', 3]]);
    expect(run(['event', 'count() AS n'], { orderBy: ['event DESC'] }).results.map((r) => r[0])).toEqual([
      'signed up',
      '$pageview',
    ]);
  });

  it('an aggregate alone is one row, even over no events; person groups by distinct id', () => {
    expect(run(['count()']).results).toEqual([[4]]);
    expect(run(['count()', 'sum(toFloat(properties.price))'], { where: ['1 = 0'] }).results).toEqual([[0, 0]]);
    expect(run(['person', 'count()']).results).toEqual([
      ['ada', 3],
      ['bob', 1],
    ]);
  });

  it('more groups than the cap is a 400 naming it', () => {
    const e = refused(() => run(['distinct_id', 'event', 'count()'], { max: 2 }));
    expect(e.attr).toBe('query__select');
    expect(e.message).toContain('more than 2 groups');
  });
});

describe('EventsQuery fields not applied', () => {
  it('refuses fields that would change the result, naming them', () => {
    expect(() => refuseUnsupportedFields({ where: ['1 = 1'] })).not.toThrow();
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
