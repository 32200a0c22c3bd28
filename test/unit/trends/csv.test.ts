import { describe, expect, it } from 'vitest';
import { trendToCsv } from '#shared/csv.ts';
import { ev, trend } from './helpers.ts';

const NOW = '2020-01-10T12:00:00Z';
const RANGE = { date_from: '2020-01-08', date_to: '2020-01-10' };
const EVENTS = [
  ev('e', '2020-01-08T01:00:00Z', { props: { browser: 'Chrome' } }),
  ev('e', '2020-01-10T01:00:00Z', { props: { browser: 'Chrome' } }),
  ev('e', '2020-01-10T02:00:00Z'),
  ev('e', '2020-01-10T03:00:00Z', { props: { browser: 'Chrome' } }),
];
const csv = (request: Record<string, unknown>) =>
  trendToCsv(trend({ events: [{ id: 'e' }], ...RANGE, ...request }, EVENTS, { now: NOW }));

describe('trendToCsv', () => {
  it('one row per series, one column per bucket headed by its day', () => {
    expect(csv({})).toBe('series,2020-01-08,2020-01-09,2020-01-10\r\ne,1,0,3\r\n');
  });

  it('quotes fields per RFC 4180', () => {
    expect(csv({ events: [{ id: 'e', custom_name: 'Views, "all"\nof them' }] })).toBe(
      'series,2020-01-08,2020-01-09,2020-01-10\r\n"Views, ""all""\nof them",1,0,3\r\n',
    );
  });

  it('names breakdown rows by series and value', () => {
    expect(csv({ breakdown: 'browser' })).toBe(
      'series,2020-01-08,2020-01-09,2020-01-10\r\ne - Chrome,1,0,2\r\ne - None (i.e. no value),0,0,1\r\n',
    );
    expect(csv({ events: [{ id: 'e' }, { id: 'e' }], formula: 'A+B', breakdown: 'browser' }).split('\r\n')[1]).toBe(
      'Formula (A+B) - Chrome,2,0,4',
    );
  });

  it('aggregated displays: a single value column', () => {
    expect(csv({ display: 'ActionsTable' })).toBe('series,value\r\ne,4\r\n');
  });

  it('compared rows say which period they are', () => {
    expect(
      csv({ compare: true })
        .split('\r\n')
        .map((l) => l.split(',')[0]),
    ).toEqual(['series', 'e (current)', 'e (previous)', '']);
  });

  it('neutralises a series name that would run as a formula; numbers stay numbers', () => {
    expect(csv({ events: [{ id: 'e', custom_name: '=1+2' }] }).split('\r\n')[1]).toBe("'=1+2,1,0,3");
    expect(csv({ formula: 'A-10' }).split('\r\n')[1]).toBe('Formula (A-10),-9,-10,-7');
  });

  it('an empty result is just the header', () => {
    expect(trendToCsv({ result: [], timezone: 'UTC' })).toBe('series\r\n');
  });
});
