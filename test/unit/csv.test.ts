import { describe, expect, it } from 'vitest';
import {
  csvCell,
  csvTable,
  flatCsv,
  MAX_CSV_NESTED_COLUMNS,
  MAX_CSV_ROWS,
  omissionNote,
  recordsToCsv,
} from '#shared/csv.ts';
import { encodeRows } from '#shared/exports/files.ts';

describe('csvCell', () => {
  it('quotes a field with a comma, quote or line break and doubles quotes (RFC 4180)', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('crlf\r\n')).toBe('"crlf\r\n"');
  });

  it('writes nothing for null and undefined, JSON for objects, ISO for dates', () => {
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
    expect(csvCell({ a: 1 })).toBe('"{""a"":1}"');
    expect(csvCell(new Date('2024-01-01T00:00:00Z'))).toBe('2024-01-01T00:00:00.000Z');
  });

  it.each([
    ['=', '=1+1', "'=1+1"],
    ['+', '+1', "'+1"],
    ['-', '-5', "'-5"],
    ['@', '@SUM(A1)', "'@SUM(A1)"],
    ['tab', '\tx', "'\tx"],
    ['carriage return', '\rx', `"'\rx"`],
  ])('prefixes text starting with %s with a quote (OWASP)', (_, text, expected) => {
    expect(csvCell(text)).toBe(expected);
  });

  it('prefixes first and then quotes as usual', () => {
    expect(csvCell('=HYPERLINK("http://evil","x")')).toBe(`"'=HYPERLINK(""http://evil"",""x"")"`);
  });

  it('leaves true numbers as they are, negative ones included, and text that only contains a lead character inside', () => {
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell(3.25)).toBe('3.25');
    expect(csvCell(0)).toBe('0');
    expect(csvCell(12n)).toBe('12');
    expect(csvCell(true)).toBe('true');
    expect(csvCell('a=b')).toBe('a=b');
    expect(csvCell(Number.NEGATIVE_INFINITY)).toBe("'-Infinity");
  });
});

describe('csvTable and records', () => {
  it('ends every line with CRLF and neutralises header cells too', () => {
    expect(
      csvTable(
        ['a', '=b'],
        [
          [1, '-x'],
          [null, 'y'],
        ],
      ),
    ).toBe("a,'=b\r\n1,'-x\r\n,y\r\n");
    expect(recordsToCsv([{ a: '+1', b: { n: 1 } }], ['a', 'b'])).toBe('a,b\r\n\'+1,"{""n"":1}"\r\n');
  });

  it('export CSV files use the same writer', () => {
    const { body } = encodeRows([{ uuid: 'u', event: '=cmd|calc', n: -2 }], ['uuid', 'event', 'n'], 'CSV', 'none');
    expect(body.toString()).toBe("uuid,event,n\r\nu,'=cmd|calc,-2\r\n");
  });
});

describe('flatCsv (format=csv of API responses)', () => {
  it('flattens nested fields into dotted columns', () => {
    const csv = flatCsv([{ id: 1, distinct_ids: ['a', 'b'], properties: { email: 'x@y', name: '@me' } }]);
    expect(csv.text).toBe("id,distinct_ids.0,distinct_ids.1,properties.email,properties.name\r\n1,a,b,x@y,'@me\r\n");
    expect(omissionNote(csv)).toBeUndefined();
  });

  it(`keeps at most ${MAX_CSV_NESTED_COLUMNS} columns from nested fields, always the top-level ones, and says what it left out`, () => {
    const properties = Object.fromEntries(Array.from({ length: MAX_CSV_NESTED_COLUMNS + 500 }, (_, i) => [`k${i}`, i]));
    const csv = flatCsv([{ id: 7, properties, uuid: 'u-7' }]);
    const [header, row] = csv.text.split('\r\n');
    const columns = header!.split(',');
    expect(columns).toHaveLength(MAX_CSV_NESTED_COLUMNS + 2);
    expect(columns[0]).toBe('id');
    expect(columns.at(-1)).toBe('uuid');
    expect(columns).toContain(`properties.k${MAX_CSV_NESTED_COLUMNS - 1}`);
    expect(columns).not.toContain(`properties.k${MAX_CSV_NESTED_COLUMNS}`);
    expect(row!.split(',').at(-1)).toBe('u-7');
    expect(csv.omittedColumns).toBe(500);
    expect(omissionNote(csv)).toBe(
      `500 columns omitted (at most ${MAX_CSV_NESTED_COLUMNS} columns from nested fields)`,
    );
  });

  it(`writes at most ${MAX_CSV_ROWS} rows`, () => {
    const csv = flatCsv(Array.from({ length: MAX_CSV_ROWS + 3 }, (_, i) => ({ i })));
    expect(csv.text.trim().split('\r\n')).toHaveLength(MAX_CSV_ROWS + 1);
    expect(omissionNote(csv)).toBe(`3 rows omitted (at most ${MAX_CSV_ROWS} rows)`);
  });
});
