import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import {
  type CheckOptions,
  checkExpr,
  type FunctionCatalog,
  type FunctionSignature,
  fieldsOf,
  hasAggregate,
  needsOf,
  parseExpr,
  parseSelectColumn,
  unalias,
} from '#shared/hogql/index.ts';

/** A small stand-in for the function table (functions/ provides the real one). */
const SCALARS: FunctionSignature[] = [
  { name: 'concat', minArgs: 2, maxArgs: Number.POSITIVE_INFINITY },
  { name: 'toFloat', minArgs: 1, maxArgs: 1 },
  { name: 'toHour', minArgs: 1, maxArgs: 2 },
  { name: 'round', minArgs: 1, maxArgs: 2 },
  { name: 'if', minArgs: 3, maxArgs: 3 },
  { name: 'multiIf', minArgs: 3, maxArgs: Number.POSITIVE_INFINITY },
  { name: 'now', minArgs: 0, maxArgs: 0 },
  { name: 'arrayElement', minArgs: 2, maxArgs: 2 },
];
const AGGREGATES: FunctionSignature[] = [
  { name: 'count', minArgs: 0, maxArgs: 1 },
  { name: 'sum', minArgs: 1, maxArgs: 1 },
  { name: 'avg', minArgs: 1, maxArgs: 1 },
  { name: 'uniq', minArgs: 1, maxArgs: Number.POSITIVE_INFINITY },
  { name: 'quantile', minArgs: 1, maxArgs: 1, minParams: 1, maxParams: 1 },
];
const byName = (list: FunctionSignature[]) => (name: string) => list.find((s) => s.name === name);
const CATALOG: FunctionCatalog = {
  scalar: byName(SCALARS),
  aggregate: byName(AGGREGATES),
  names: () => [...SCALARS, ...AGGREGATES].map((s) => s.name),
};

const ATTR = 'query__series__0__math_hogql';
/** Every name a function, for tests about something else than the catalog. */
const ANY: FunctionCatalog = {
  scalar: (name) => ({ name, minArgs: 0, maxArgs: 10 }),
  aggregate: () => undefined,
  names: () => [],
};
const events = (aggregates: CheckOptions['aggregates']): CheckOptions => ({
  scope: 'events',
  aggregates,
  catalog: CATALOG,
});
const persons: CheckOptions = { scope: 'persons', aggregates: 'forbidden', catalog: CATALOG };

function refused(text: string, options: CheckOptions, detail: RegExp): void {
  let caught: unknown;
  try {
    checkExpr(parseExpr(text, ATTR), options, ATTR);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(ValidationError);
  expect((caught as ValidationError).attr).toBe(ATTR);
  expect((caught as ValidationError).detail).toMatch(detail);
}

const accepted = (text: string, options: CheckOptions): void => {
  expect(() => checkExpr(parseExpr(text, ATTR), options, ATTR)).not.toThrow();
};

describe('checkExpr: fields', () => {
  it.each([
    'event',
    'timestamp',
    'distinct_id',
    'uuid',
    'person_id',
    '$session_id',
    'elements_chain',
    'created_at',
    'properties.$os',
    'properties.$a.b',
    "properties['a b']",
    'person.properties.email',
    'person.created_at',
  ])('events scope reads %s', (text) => accepted(text, events('forbidden')));

  it.each([
    ['foo', /"foo" at position 0 is not a field\. Fields: event, timestamp, .*properties\.<key>/],
    ['properties', /"properties" at position 0 needs a key \(properties\.<key>\)/],
    ['person.properties', /needs a key/],
    ['event.x', /"event\.x" at position 0 is not a field/],
    ['Event', /"Event" at position 0 is not a field/],
    ['person.email', /"person\.email" at position 0 is not a field/],
    ['1 + nope', /"nope" at position 4 is not a field/],
  ])('events scope refuses %s', (text, detail) => refused(text, events('forbidden'), detail));

  it('persons scope reads id, created_at, is_identified and properties.<key>', () => {
    for (const text of ['id', 'created_at', 'is_identified', 'properties.email', "properties['$initial os']"]) {
      accepted(text, persons);
    }
    refused(
      'event',
      persons,
      /"event" at position 0 is not a field\. Fields: id, created_at, is_identified, properties\.<key>\./,
    );
    refused('person.properties.email', persons, /is not a field/);
  });
});

describe('checkExpr: functions', () => {
  it('refuses an unknown function, listing the supported ones', () => {
    refused(
      'foo(event)',
      events('forbidden'),
      /^Unsupported function "foo" at position 0\. Supported functions: arrayElement, avg, concat, count, .*, uniq\. See docs\/hogql\.md\.$/,
    );
    refused(
      'now() - INTERVAL 7 DAY',
      events('forbidden'),
      /Unsupported function "toIntervalDay" .*INTERVAL n unit is read only added to or subtracted from a date/,
    );
    // With dateAdd and dateSub in the catalog, `x ± INTERVAL n unit` is one of them; an interval alone is still no value.
    const dated: FunctionCatalog = {
      ...CATALOG,
      scalar: byName([
        ...SCALARS,
        { name: 'dateAdd', minArgs: 3, maxArgs: 3 },
        { name: 'dateSub', minArgs: 3, maxArgs: 3 },
      ]),
    };
    accepted('now() - INTERVAL 7 DAY', { ...events('forbidden'), catalog: dated });
    accepted('INTERVAL 1 HOUR + now()', { ...events('forbidden'), catalog: dated });
    refused('toIntervalDay(7)', { ...events('forbidden'), catalog: dated }, /Unsupported function "toIntervalDay"/);
    refused(
      'now() * INTERVAL 7 DAY',
      { ...events('forbidden'), catalog: dated },
      /Unsupported function "toIntervalDay"/,
    );
  });

  it('checks arities', () => {
    refused('toFloat()', events('forbidden'), /Function "toFloat" at position 0 takes 1 argument, got 0\./);
    refused('toHour(a, b, c)', events('forbidden'), /takes 1 to 2 arguments, got 3/);
    refused("concat('a')", events('forbidden'), /takes at least 2 arguments, got 1/);
    refused('now(1)', events('forbidden'), /takes 0 arguments, got 1/);
    accepted("concat('a', 'b', 'c', 'd')", events('forbidden'));
  });

  it('checks parameters of parametric aggregates', () => {
    accepted('quantile(0.9)(toFloat(properties.x))', events('required'));
    refused(
      'quantile(toFloat(properties.x))',
      events('required'),
      /"quantile" .*needs 1 parameter, as in quantile\(0\.5\)\(x\)/,
    );
    refused('sum(1)(properties.x)', events('required'), /"sum" .*takes no parameters/);
    refused('quantile(0.5, 0.9)(properties.x)', events('required'), /takes 1 parameter, got 2/);
    refused('quantile(properties.p)(properties.x)', events('required'), /takes number constants as parameters/);
  });

  it('allows DISTINCT only in count and uniq-like aggregates', () => {
    accepted('count(DISTINCT person_id)', events('required'));
    accepted('uniq(DISTINCT person_id)', events('required'));
    refused(
      'sum(DISTINCT toFloat(properties.x))',
      events('required'),
      /DISTINCT at position 0 is supported only in count/,
    );
  });

  it('checks calls the parser made from sugar', () => {
    accepted("event = 'a' ? 1 : 2", events('forbidden'));
    accepted("CASE WHEN event = 'a' THEN 1 END", events('forbidden'));
    refused('a ?? b', events('forbidden'), /Unsupported function "ifNull"/);
  });
});

describe('checkExpr: aggregate placement', () => {
  it('forbidden: an aggregate is refused where the expression is evaluated per event', () => {
    refused('count()', events('forbidden'), /aggregate function "count" at position 0 is not allowed here/);
    refused(
      "concat(event, 'x') = round(sum(1))",
      events('forbidden'),
      /aggregate function "sum" at position 27 is not allowed here/,
    );
  });

  it('required: the expression must aggregate, and read fields only inside aggregates', () => {
    accepted('avg(toFloat(properties.price))', events('required'));
    accepted('round(sum(toFloat(properties.x)) / count(), 2)', events('required'));
    refused('toFloat(properties.price)', events('required'), /must aggregate its events/);
    refused(
      'sum(toFloat(properties.x)) / toFloat(properties.y)',
      events('required'),
      /field "properties\.y" at position \d+ must be inside an aggregate/,
    );
  });

  it('allowed: plain columns or aggregate columns, never an aggregate in an aggregate', () => {
    accepted('properties.$os', events('allowed'));
    accepted('count()', events('allowed'));
    refused(
      'sum(count())',
      events('allowed'),
      /"count" at position 4 cannot be used inside another aggregate \("sum"\)/,
    );
    refused(
      'concat(event, round(count()))',
      events('allowed'),
      /field "event" at position 7 must be inside an aggregate/,
    );
  });
});

describe('analysis helpers', () => {
  it('fieldsOf lists the distinct chains read, and needsOf the projection', () => {
    const e = parseExpr(
      "concat(properties.$os, properties.$os, properties.$a.b, person.properties.email) = event AND $session_id != ''",
      ATTR,
    );
    expect(fieldsOf(e)).toEqual([
      ['properties', '$os'],
      ['properties', '$a', 'b'],
      ['person', 'properties', 'email'],
      ['event'],
      ['$session_id'],
    ]);
    expect(needsOf(e)).toEqual({
      columns: ['event'],
      properties: ['$os', '$a', '$session_id'],
      personProperties: ['email'],
    });
  });

  it('hasAggregate and unalias', () => {
    const isAggregate = (name: string) => CATALOG.aggregate(name) !== undefined;
    expect(hasAggregate(parseExpr('round(avg(x), 2)', ATTR), isAggregate)).toBe(true);
    expect(hasAggregate(parseExpr('round(x, 2)', ATTR), isAggregate)).toBe(false);
    expect(unalias(parseExpr('count() AS c', ATTR))).toMatchObject({ kind: 'call', name: 'count' });
  });

  it('entry points take check options', () => {
    expect(() => parseSelectColumn('foo() -- Foo', ATTR, events('allowed'))).toThrow(/Unsupported function "foo"/);
    expect(parseSelectColumn('count() -- Total', ATTR, events('allowed')).label).toBe('Total');
  });
});

describe('intervals past their cap (400 years) are refused when the text is read, whatever the rows', () => {
  it.each([
    ['timestamp - INTERVAL 999999999999 YEAR', /an interval of 999999999999 years is out of range: at most 400 years/],
    ['now() - toIntervalDay(1e30)', /an interval of 1e\+30 days .* at most 146,097 days/],
    ["dateAdd('hh', 3506329, timestamp)", /at most 3,506,328 hours/],
    ["toHour(DATESUB('minute', -210379681, timestamp))", /at most 210,379,680 minutes/],
    ['INTERVAL 1601 QUARTER + timestamp', /at most 1,600 quarters/],
  ])('%s', (text, detail) => {
    refused(text, events('forbidden'), detail);
  });

  it('within the cap, and amounts that are not constants, pass the check', () => {
    for (const text of ['timestamp - INTERVAL 400 YEAR', "dateAdd('day', toHour(timestamp), timestamp)"])
      expect(() => checkExpr(parseExpr(text, ATTR), { ...events('forbidden'), catalog: ANY }, ATTR)).not.toThrow();
  });
});
