import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.ts';
import { parseExportQuery } from '#shared/exports/hogql.ts';
import { errorResponse } from '#shared/http/errors.ts';
import { compilePersonFilter, parsePersonFilter } from '#shared/domain/person-filters.ts';
import { MAX_JSON_DEPTH } from '#shared/json.ts';
import { MAX_FORMULA_DEPTH, MAX_FORMULA_LENGTH } from '#shared/trends/formula.ts';
import { parseTrendRequest } from '#shared/trends/parse.ts';
import { parseProperties } from '#shared/trends/properties.ts';

function validationError(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

const timed = (fn: () => unknown) => {
  const started = performance.now();
  try {
    fn();
  } catch {
    // only the time matters here
  }
  return performance.now() - started;
};

const nested = (depth: number, leaf: unknown = { key: 'k', value: 'v' }) => {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i += 1) value = { type: 'AND', values: [value] };
  return value;
};
/** The same as JSON text, built as text: JSON.stringify itself overflows the stack on 10,000 levels. */
const nestedText = (depth: number) =>
  `${'{"type":"AND","values":['.repeat(depth)}{"key":"k","value":"v"}${']}'.repeat(depth)}`;
const events = JSON.stringify([{ id: 'e' }]);

describe('hogql_query validation is linear', () => {
  // The patterns the query used to be read with: the oracle for short inputs, where they are fast.
  const oldOutline = /^\s*select\s+([\s\S]+?)\s+from\s+events\s*;?\s*$/i;
  const oldAlias = /^([\s\S]+?)\s+as\s+(\w+)$/i;

  it.each([
    ['spaces after select', `select ${' '.repeat(9_990)}`],
    ['spaces then from', `select ${' '.repeat(9_985)}from`],
    ['spaces before from events', `select ${' '.repeat(9_970)}x from events`],
    ['a field with spaces before no alias', `select a${' '.repeat(9_970)}x from events`],
    ['deep brackets', `select ${'('.repeat(4_990)}${')'.repeat(4_990)} from events`],
    ['many from', `select a${' from'.repeat(1_990)} events`],
  ])('answers 10,000 characters of %s within a second', (_, query) => {
    expect(query.length).toBeGreaterThan(9_900);
    expect(timed(() => parseExportQuery(query))).toBeLessThan(1_000);
  });

  const outcome = (query: string): { aliases?: string[]; detail?: string } => {
    try {
      return { aliases: parseExportQuery(query).map((f) => f.alias) };
    } catch (error) {
      return { detail: (error as ValidationError).detail };
    }
  };

  it('accepts the outline the old pattern accepted (a blank field list aside)', () => {
    const word = fc.constantFrom(
      'select',
      'SELECT',
      'from',
      'FROM',
      'events',
      'Events',
      'uuid',
      'x',
      ',',
      ';',
      ' ',
      '  ',
      '\t',
      '\n',
    );
    fc.assert(
      fc.property(fc.array(word, { maxLength: 12 }), (words) => {
        const query = words.join('');
        const old = oldOutline.exec(query);
        const accepted = !outcome(query).detail?.includes('only "SELECT');
        return accepted === Boolean(old && old[1]!.trim());
      }),
      { numRuns: 3_000 },
    );
    expect(outcome(' SELECT uuid ,event  AS  name,properties.plan as plan FROM  events ;').aliases).toEqual([
      'uuid',
      'name',
      'plan',
    ]);
    expect(outcome('select    from events').detail).toContain('only "SELECT');
  });

  it('splits a field at the alias the old pattern found', () => {
    const word = fc.constantFrom('uuid', 'event', 'properties.plan', 'as', 'AS', 'x', '_1', ' ', '  ', '\t');
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 8 }), (words) => {
        const field = words.join('').trim();
        fc.pre(field !== '');
        const old = oldAlias.exec(field);
        const result = outcome(`select ${field} from events`);
        if (result.aliases) return old ? result.aliases[0] === old[2] : true;
        return result.detail!.includes(`"${old ? old[1]!.trim() : field}"`);
      }),
      { numRuns: 3_000 },
    );
  });
});

describe('formula limits', () => {
  const trendWith = (formula: string) => () => parseTrendRequest({ events: [{ id: 'a' }, { id: 'b' }], formula });

  it(`refuses formulas longer than ${MAX_FORMULA_LENGTH} characters`, () => {
    expect(() => trendWith(`A${'+B'.repeat((MAX_FORMULA_LENGTH - 1) / 2)}`)()).not.toThrow();
    const error = validationError(trendWith(`A${'+B'.repeat((MAX_FORMULA_LENGTH + 1) / 2)}`));
    expect(error.attr).toBe('formula');
    expect(error.detail).toContain(String(MAX_FORMULA_LENGTH));
  });

  it(`refuses parentheses nested deeper than ${MAX_FORMULA_DEPTH}`, () => {
    expect(() => trendWith(`${'('.repeat(MAX_FORMULA_DEPTH)}A${')'.repeat(MAX_FORMULA_DEPTH)}`)()).not.toThrow();
    const error = validationError(
      trendWith(`${'('.repeat(MAX_FORMULA_DEPTH + 1)}A${')'.repeat(MAX_FORMULA_DEPTH + 1)}`),
    );
    expect(error.attr).toBe('formula');
    expect(error.detail).toContain(String(MAX_FORMULA_DEPTH));
  });
});

describe('JSON inside string parameters nests no deeper than a body may', () => {
  it('trend GET parameters: properties, events, actions, breakdown', () => {
    const deep = nestedText(10_000);
    for (const [name, value] of [
      ['properties', deep],
      ['events', `[${deep}]`],
      ['actions', `[${deep}]`],
      ['breakdown', `[${'['.repeat(10_000)}${']'.repeat(10_000)}]`],
    ]) {
      const error = validationError(() => parseTrendRequest({ events, [name!]: value }));
      expect(error.attr).toBe(name);
      expect(error.detail).toContain(String(MAX_JSON_DEPTH));
    }
  });

  it('property groups up to the limit are read; deeper ones are a 400, from a string or a parsed value', () => {
    expect(parseTrendRequest({ events, properties: JSON.stringify(nested(60)) }).properties.type).toBe('AND');
    for (const raw of [nested(MAX_JSON_DEPTH), nestedText(MAX_JSON_DEPTH), nested(100_000)]) {
      const error = validationError(() => parseProperties(raw, 'test_account_filters'));
      expect(error.attr).toBe('test_account_filters');
    }
  });

  it('the persons list properties parameter', () => {
    const group = parsePersonFilter(JSON.stringify([nested(60, { key: 'plan', value: 'pro' })]));
    expect(compilePersonFilter(group)({ plan: 'pro' })).toBe(true);
    const error = validationError(() => parsePersonFilter(nestedText(100_000)));
    expect(error.attr).toBe('properties');
    expect(error.detail).toContain(String(MAX_JSON_DEPTH));
  });
});

describe('the error mapper', () => {
  it('answers a stack overflow with a 400: only input nested too deeply gets one', () => {
    const recurse = (n: number): number => recurse(n + 1) + 1;
    let overflow: unknown;
    try {
      recurse(0);
    } catch (error) {
      overflow = error;
    }
    expect(overflow).toBeInstanceOf(RangeError);
    const response = errorResponse(overflow);
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body!)).toEqual({
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'The input is nested too deeply.',
      attr: null,
    });
  });

  it('still answers other errors, RangeErrors included, with a 500 without internals', () => {
    const response = errorResponse(new RangeError('Invalid array length'));
    expect(response.statusCode).toBe(500);
    expect(JSON.parse(response.body!).detail).toBe('A server error occurred.');
  });
});
