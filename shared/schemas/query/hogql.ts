import * as v from 'valibot';
import { text } from './fields.ts';

/** PostHog's HogQLQuery LIMIT: 100 rows unless the text says otherwise, at most 50,000 (MAX_SELECT_RETURNED_ROWS). */
export const DEFAULT_HOGQL_LIMIT = 100;
export const MAX_HOGQL_LIMIT = 50_000;
/** The longest statement (shared/hogql/select.ts SELECT_LIMITS). */
export const MAX_HOGQL_QUERY_CHARS = 20_000;
export const MAX_HOGQL_VARIABLES = 50;

const dateText = v.optional(v.nullable(text(100)));

/**
 * PostHog's HogQLQuery (posthog/schema.py): a SELECT statement, with what its `{filters}` and
 * `{variables.<code_name>}` placeholders expand to. Loose: fields that do not change the rows
 * (`name`, `modifiers`, `tags`, `explain`, ...) pass.
 */
export const hogqlQuery = v.looseObject({
  kind: v.literal('HogQLQuery'),
  query: text(MAX_HOGQL_QUERY_CHARS),
  /** PostHog's HogQLFilters: `{filters}` is their date range, property filters and test-account filters. */
  filters: v.optional(
    v.nullable(
      v.looseObject({
        dateRange: v.optional(v.nullable(v.looseObject({ date_from: dateText, date_to: dateText }))),
        /** Parsed like a trend's property filters (event properties), in the runner. */
        properties: v.optional(v.unknown()),
        filterTestAccounts: v.optional(v.nullable(v.boolean())),
      }),
    ),
  ),
  /** SQL insight variables by id; `{variables.<code_name>}` reads `value`. */
  variables: v.optional(
    v.nullable(
      v.pipe(
        v.record(
          text(200),
          v.looseObject({
            variableId: v.optional(text(200)),
            code_name: text(200),
            value: v.optional(v.nullable(v.union([v.string(), v.number(), v.boolean()]))),
          }),
        ),
        v.check((r) => Object.keys(r).length <= MAX_HOGQL_VARIABLES, `At most ${MAX_HOGQL_VARIABLES} variables.`),
      ),
    ),
  ),
  /** `{name}` placeholders' values (PostHog's `values`): constants only. */
  values: v.optional(
    v.nullable(
      v.pipe(
        v.record(text(200), v.nullable(v.union([v.string(), v.number(), v.boolean()]))),
        v.check((r) => Object.keys(r).length <= MAX_HOGQL_VARIABLES, `At most ${MAX_HOGQL_VARIABLES} values.`),
      ),
    ),
  ),
});
export type HogQLQuery = v.InferOutput<typeof hogqlQuery>;
