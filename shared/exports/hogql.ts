import { ValidationError } from '../errors.ts';

/**
 * The subset of HogQL a batch export accepts in `hogql_query`: `SELECT <fields> FROM events`, where a
 * field is an exported column, `properties.<key>` / `properties['key']` or
 * `person.properties.<key>`, each optionally `AS <alias>`. Anything else is refused (400), as PostHog
 * refuses joins, subqueries and unions.
 */
export interface SelectField {
  expression: string;
  alias: string;
  read: (row: ExportRowSource) => unknown;
}

export interface ExportRowSource {
  columns: Record<string, unknown>;
  properties: Record<string, unknown>;
  person_properties: Record<string, unknown>;
}

export const EVENT_COLUMNS = [
  'uuid',
  'event',
  'distinct_id',
  'person_id',
  'properties',
  'person_properties',
  'elements_chain',
  'timestamp',
  'created_at',
  '_inserted_at',
];

const ATTR = 'hogql_query';
const IDENT = '[A-Za-z_$][\\w$]*';
const KEY = `(?:\\.(${IDENT})|\\['((?:[^'\\\\]|\\\\.)*)'\\])`;
const FIELD = new RegExp(`^(?:(person)\\.)?(properties)${KEY}$|^(${IDENT})$`, 'i');

function splitFields(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote = false;
  let current = '';
  for (const ch of list) {
    if (ch === "'") quote = !quote;
    if (!quote && (ch === '(' || ch === '[')) depth += 1;
    if (!quote && (ch === ')' || ch === ']')) depth -= 1;
    if (!quote && depth === 0 && ch === ',') {
      out.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) out.push(current.trim());
  return out;
}

/*
 * The query's outline and a field's alias are found by scanning, not by regular expressions: the
 * obvious patterns (`select\s+([\s\S]+?)\s+from\s+events`, `^([\s\S]+?)\s+as\s+(\w+)$`) backtrack
 * cubically or quadratically over long runs of whitespace (10,000 spaces took minutes).
 */

/** `text` without its trailing keyword (any case) and the whitespace before it, or null when it does not end that way. */
function withoutLastWord(text: string, word: string): string | null {
  if (text.slice(-word.length).toLowerCase() !== word) return null;
  const rest = text.slice(0, -word.length);
  const trimmed = rest.trimEnd();
  return trimmed.length < rest.length ? trimmed : null;
}

/** The field list of `SELECT <fields> FROM events [;]`, or null. */
function selectList(query: string): string | null {
  let rest = query.trim();
  if (rest.endsWith(';')) rest = rest.slice(0, -1).trimEnd();
  const head = withoutLastWord(rest, 'events');
  const select = head === null ? null : withoutLastWord(head, 'from');
  if (select === null || select.slice(0, 6).toLowerCase() !== 'select') return null;
  const fields = select.slice(6);
  return fields.trimStart().length < fields.length && fields.trim() ? fields.trim() : null;
}

/** `<expression> AS <alias>` split at its last alias. */
function splitAlias(field: string): { expression: string; alias?: string } {
  let start = field.length;
  while (start > 0 && /\w/.test(field[start - 1]!)) start -= 1;
  const alias = field.slice(start);
  const beforeAlias = field.slice(0, start).trimEnd();
  const expression = beforeAlias.slice(0, -2).trimEnd();
  const separated = beforeAlias.length < start && expression.length < beforeAlias.length - 2;
  return alias && separated && expression && beforeAlias.slice(-2).toLowerCase() === 'as'
    ? { expression, alias }
    : { expression: field };
}

export function parseExportQuery(query: string): SelectField[] {
  const list = selectList(query);
  if (list === null)
    throw new ValidationError('Unsupported HogQL query: only "SELECT <fields> FROM events" is supported.', ATTR);
  if (/\b(join|union|with|where|group|order|limit)\b|\(\s*select/i.test(list)) {
    throw new ValidationError(
      'Unsupported HogQL query: joins, subqueries, unions and clauses other than SELECT/FROM are not supported.',
      ATTR,
    );
  }
  const fields = splitFields(list).map((raw) => {
    const aliased = splitAlias(raw);
    const expression = aliased.expression.trim();
    const f = FIELD.exec(expression);
    if (!f) throw new ValidationError(`Invalid HogQL query: unsupported field "${expression}".`, ATTR);
    if (f[5] !== undefined) {
      const column = f[5].toLowerCase();
      if (!EVENT_COLUMNS.includes(column))
        throw new ValidationError(`Invalid HogQL query: unknown field "${expression}".`, ATTR);
      return { expression, alias: aliased.alias ?? column, read: (row: ExportRowSource) => row.columns[column] };
    }
    const key = f[3] ?? f[4]!.replace(/\\(.)/g, '$1');
    const ofPerson = Boolean(f[1]);
    return {
      expression,
      alias: aliased.alias ?? key,
      read: (row: ExportRowSource) => {
        const props = ofPerson ? row.person_properties : row.properties;
        // Own keys only: `properties.constructor` reads as absent unless the event holds it.
        return Object.hasOwn(props, key) ? (props[key] ?? null) : null;
      },
    };
  });
  const aliases = fields.map((f) => f.alias);
  const duplicate = aliases.find((a, i) => aliases.indexOf(a) !== i);
  if (duplicate) throw new ValidationError(`Invalid HogQL query: the field name "${duplicate}" is used twice.`, ATTR);
  return fields;
}
