/**
 * What a project's lake files still hold but must not serve: events deleted and persons deleted or
 * changed since their days were written (shared/domain/lake-hides.ts keeps the set until the
 * compactor has rewritten those days). The printers (sql/select.ts, sql/trends.ts) apply it: the rows
 * as one more conjunct of the top-level WHERE, the person columns as NULL for the persons named.
 * Every value reaches the SQL through stringLiteral or the dialect's timestamp literal.
 */
import { type Dialect, identifier, stringLiteral } from './sql/dialect.ts';

export interface LakeHidden {
  /** Deleted events: the rows of these distinct ids with a timestamp up to `until`. */
  rows: { distinctIds: string[]; until: Date }[];
  /** Deleted persons (uuids): every person column of their events reads NULL, as a rewrite leaves it. */
  persons: string[];
  /** Removed person properties: per key, the persons (uuids) whose value of it reads NULL. */
  keys: Map<string, string[]>;
}

export const NOTHING_HIDDEN: LakeHidden = { rows: [], persons: [], keys: new Map() };

const textList = (values: readonly string[]) => values.map(stringLiteral).join(', ');

/** The conjunct that leaves the deleted rows out (null: none are). */
export function hiddenRowsSql(hidden: LakeHidden | undefined, d: Dialect): string | null {
  if (!hidden?.rows.length) return null;
  const terms = hidden.rows
    .filter((r) => r.distinctIds.length)
    .map(
      (r) =>
        `(${identifier('distinct_id')} IN (${textList(r.distinctIds)}) AND ${identifier('timestamp')} <= ${d.timestamp(r.until)})`,
    );
  return terms.length ? `(NOT (${terms.join(' OR ')}))` : null;
}

/** `column` (a person column's SQL), NULL for the events of `persons`. */
function unlessPerson(column: string, persons: readonly string[]): string {
  if (!persons.length) return column;
  return `(CASE WHEN ${identifier('person_id')} IN (${textList(persons)}) THEN NULL ELSE ${column} END)`;
}

/** A person column (`person_id`, `person_created_at`): NULL for deleted persons. */
export function personColumnSql(column: string, hidden: LakeHidden | undefined): string {
  return unlessPerson(column, hidden?.persons ?? []);
}

/** `person.properties.<key>` (its SQL `value`): NULL for deleted persons and for those the key was removed from. */
export function personPropertySql(key: string, value: string, hidden: LakeHidden | undefined): string {
  if (!hidden) return value;
  return unlessPerson(value, [...new Set([...hidden.persons, ...(hidden.keys.get(key) ?? [])])]);
}
