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

export const EVENT_COLUMNS = ['uuid', 'event', 'distinct_id', 'person_id', 'properties', 'person_properties', 'elements_chain', 'timestamp', 'created_at', '_inserted_at'];

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

export function parseExportQuery(query: string): SelectField[] {
  const m = /^\s*select\s+([\s\S]+?)\s+from\s+events\s*;?\s*$/i.exec(query);
  if (!m) throw new ValidationError('Unsupported HogQL query: only "SELECT <fields> FROM events" is supported.', ATTR);
  if (/\b(join|union|with|where|group|order|limit)\b|\(\s*select/i.test(m[1]!)) {
    throw new ValidationError('Unsupported HogQL query: joins, subqueries, unions and clauses other than SELECT/FROM are not supported.', ATTR);
  }
  const fields = splitFields(m[1]!).map((raw) => {
    const aliased = /^([\s\S]+?)\s+as\s+(\w+)$/i.exec(raw);
    const expression = (aliased ? aliased[1]! : raw).trim();
    const f = FIELD.exec(expression);
    if (!f) throw new ValidationError(`Invalid HogQL query: unsupported field "${expression}".`, ATTR);
    if (f[5] !== undefined) {
      const column = f[5].toLowerCase();
      if (!EVENT_COLUMNS.includes(column)) throw new ValidationError(`Invalid HogQL query: unknown field "${expression}".`, ATTR);
      return { expression, alias: aliased?.[2] ?? column, read: (row: ExportRowSource) => row.columns[column] };
    }
    const key = f[3] ?? f[4]!.replace(/\\(.)/g, '$1');
    const ofPerson = Boolean(f[1]);
    return {
      expression,
      alias: aliased?.[2] ?? key,
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
