import { ValidationError } from '#shared/errors.ts';
import { integerNotExact, type Limits, MAX_EXACT_INTEGER, stringTooLong } from './limits.ts';

/**
 * HogQL's tokens (read from PostHog's HogQLLexer grammar). Keywords are not tokens of their own:
 * the parser reads them from unquoted identifiers where it expects one, so `timestamp` or `date`
 * stay plain field names and a quoted identifier is never a keyword.
 */
export type Token =
  | { type: 'number'; value: number; start: number; end: number }
  | { type: 'string'; value: string; start: number; end: number }
  | { type: 'ident'; value: string; quoted: boolean; start: number; end: number }
  | { type: 'op'; value: string; start: number; end: number }
  | { type: 'eof'; value: ''; start: number; end: number };

export interface Comment {
  /** `--` and `//` are line comments; a trailing `--` comment is a select column's label. */
  kind: 'line' | 'block';
  marker: '--' | '//' | '/*';
  /** The comment's text without its markers. */
  text: string;
  start: number;
  end: number;
}

/** Matched longest first, so `!~*` wins over `!~` and `<=` over `<`. */
const OPERATORS = new Set([
  '!~*',
  '=~*',
  '!=',
  '<>',
  '<=',
  '>=',
  '==',
  '=~',
  '!~',
  '~*',
  '||',
  '??',
  '=',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '(',
  ')',
  '[',
  ']',
  ',',
  '.',
  '?',
  ':',
  '~',
  // A statement's end and `{filters}` placeholders (shared/hogql/select.ts); an expression refuses them as unexpected.
  ';',
  '{',
  '}',
]);

/** HogQL's whitespace: the Unicode White_Space set, plus the byte-order mark. */
const WHITESPACE = new Set([
  ' ',
  '\t',
  '\r',
  '\n',
  '\u000B',
  '\u000C',
  '\u0085',
  '\u00A0',
  '\u1680',
  ...Array.from({ length: 11 }, (_, k) => String.fromCharCode(0x2000 + k)),
  '\u2028',
  '\u2029',
  '\u202F',
  '\u205F',
  '\u3000',
  '\uFEFF',
]);

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isIdentStart = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || c === '$';
const isIdentPart = (c: string): boolean => isIdentStart(c) || isDigit(c);
const isHex = (c: string): boolean => isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');

/**
 * PostHog's escapes (HogQLLexer's ESCAPE_CHAR_COMMON, unquoted as its parser does): these read as the
 * character, `\0` as nothing (PostHog drops NUL), `\\` as `\`; `\xHH` and the upper-case letters are
 * accepted and kept as written (PostHog does not decode them); any other `\c` is a syntax error, as in
 * PostHog (`'\d+'` must be written `'\\d+'`).
 */
const ESCAPES: Record<string, string> = {
  b: '\b',
  f: '\f',
  r: '\r',
  n: '\n',
  t: '\t',
  a: '\u0007',
  v: '\v',
  '0': '',
  '\\': '\\',
};
const KEPT_ESCAPES = new Set(['B', 'F', 'R', 'N', 'T', 'A', 'V']);

function describe(c: string): string {
  const code = c.codePointAt(0) ?? 0;
  return code < 0x20 || code === 0x7f ? `U+${code.toString(16).toUpperCase().padStart(4, '0')}` : `"${c}"`;
}

export function tokenize(text: string, limits: Limits, attr: string): { tokens: Token[]; comments: Comment[] } {
  const tokens: Token[] = [];
  const comments: Comment[] = [];
  const n = text.length;
  let i = 0;

  const fail = (detail: string): never => {
    throw new ValidationError(`HogQL syntax error: ${detail}`, attr);
  };

  /** A quoted string or identifier: `quote` doubled or backslash-escaped inside. */
  const readQuoted = (quote: string, what: string): string => {
    const start = i;
    i++;
    let out = '';
    for (;;) {
      if (i >= n) fail(`unterminated ${what} starting at position ${start}.`);
      const c = text.charAt(i);
      if (c === quote) {
        if (text.charAt(i + 1) === quote) {
          out += quote;
          i += 2;
          continue;
        }
        i++;
        return out;
      }
      if (c === '\\') {
        if (i + 1 >= n) fail(`unterminated ${what} starting at position ${start}.`);
        const e = text.charAt(i + 1);
        if ((e === 'x' || e === 'X') && isHex(text.charAt(i + 2)) && isHex(text.charAt(i + 3))) {
          out += text.slice(i, i + 4);
          i += 4;
        } else if (Object.hasOwn(ESCAPES, e)) {
          out += ESCAPES[e];
          i += 2;
        } else if (KEPT_ESCAPES.has(e) || (quote === '`' && e === "'")) {
          out += `\\${e}`;
          i += 2;
        } else if (e === quote && quote !== '`') {
          out += quote;
          i += 2;
        } else {
          fail(`unsupported escape "\\${e}" at position ${i} (write "\\\\" for a backslash).`);
        }
      } else {
        out += c;
        i++;
      }
      if (out.length > limits.maxStringLength) throw stringTooLong(limits, attr);
    }
  };

  const readNumber = (): number => {
    const start = i;
    let value: number;
    // An integer literal (ClickHouse's UInt64/Int64), not a float: one a double cannot hold exactly is refused.
    let integral = true;
    const prefix = text.charAt(i) === '0' ? text.charAt(i + 1).toLowerCase() : '';
    if (prefix === 'x' || prefix === 'b') {
      i += 2;
      const digitOk = prefix === 'x' ? isHex : (c: string) => c === '0' || c === '1';
      const from = i;
      while (i < n && digitOk(text.charAt(i))) i++;
      if (i === from) fail(`invalid number at position ${start}.`);
      value = Number.parseInt(text.slice(from, i), prefix === 'x' ? 16 : 2);
    } else {
      while (i < n && isDigit(text.charAt(i))) i++;
      if (text.charAt(i) === '.' && (i === start || !isIdentStart(text.charAt(i + 1)))) {
        integral = false;
        i++;
        while (i < n && isDigit(text.charAt(i))) i++;
      }
      if ((text.charAt(i) === 'e' || text.charAt(i) === 'E') && i > start) {
        const sign = text.charAt(i + 1) === '+' || text.charAt(i + 1) === '-' ? 1 : 0;
        if (isDigit(text.charAt(i + 1 + sign))) {
          integral = false;
          i += 1 + sign;
          while (i < n && isDigit(text.charAt(i))) i++;
        }
      }
      value = Number(text.slice(start, i));
    }
    if (i < n && (isIdentPart(text.charAt(i)) || text.charAt(i) === '.')) {
      // `1abc`, `0x1g`, `1.2.3`: a malformed number, not a number followed by a name.
      if (text.charAt(i) !== '.' || isDigit(text.charAt(i + 1))) fail(`invalid number at position ${start}.`);
    }
    if (integral && value > MAX_EXACT_INTEGER)
      throw integerNotExact(
        `the integer ${text.slice(start, Math.min(i, start + 40))} at position ${start}`,
        attr,
        " Compare such ids as strings ('...').",
      );
    return value;
  };

  while (i < n) {
    const c = text.charAt(i);
    if (WHITESPACE.has(c)) {
      i++;
      continue;
    }
    const start = i;
    const two = text.slice(i, i + 2);
    if (two === '--' || two === '//') {
      let end = i + 2;
      while (end < n && text.charAt(end) !== '\n' && text.charAt(end) !== '\r') end++;
      comments.push({ kind: 'line', marker: two, text: text.slice(i + 2, end), start, end });
      i = end;
      continue;
    }
    if (two === '/*') {
      const close = text.indexOf('*/', i + 2);
      if (close < 0) fail(`unterminated comment starting at position ${start}.`);
      comments.push({ kind: 'block', marker: '/*', text: text.slice(i + 2, close), start, end: close + 2 });
      i = close + 2;
      continue;
    }
    if (c === "'") {
      const value = readQuoted("'", 'string');
      tokens.push({ type: 'string', value, start, end: i });
      continue;
    }
    if (c === '`' || c === '"') {
      const value = readQuoted(c, 'quoted identifier');
      tokens.push({ type: 'ident', value, quoted: true, start, end: i });
      continue;
    }
    const prev = tokens[tokens.length - 1];
    // `.5` is a number unless it follows something a `.` would access (`t.5` is not ours to read).
    const leadingDot =
      c === '.' &&
      isDigit(text.charAt(i + 1)) &&
      !(prev && (prev.type === 'ident' || (prev.type === 'op' && (prev.value === ')' || prev.value === ']'))));
    if (isDigit(c) || leadingDot) {
      const value = readNumber();
      tokens.push({ type: 'number', value, start, end: i });
      continue;
    }
    if (isIdentStart(c)) {
      while (i < n && isIdentPart(text.charAt(i))) i++;
      tokens.push({ type: 'ident', value: text.slice(start, i), quoted: false, start, end: i });
      continue;
    }
    const op = [text.slice(i, i + 3), two, c].find((o) => OPERATORS.has(o));
    if (op === undefined) {
      const ch = String.fromCodePoint(text.codePointAt(i) ?? 0);
      fail(`unexpected character ${describe(ch)} at position ${start}.`);
    } else {
      i += op.length;
      tokens.push({ type: 'op', value: op, start, end: i });
    }
  }
  tokens.push({ type: 'eof', value: '', start: n, end: n });
  return { tokens, comments };
}
