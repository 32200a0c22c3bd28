import * as v from 'valibot';
import { integerIn, text } from './fields.ts';

export const DEFAULT_EVENTS_LIMIT = 100;
export const MAX_EVENTS_LIMIT = 10_000;
/** At most this many rows skipped (`offset`): a page past it is read like any other, event by event. */
export const MAX_EVENTS_OFFSET = 10_000;
export const MAX_SELECT_COLUMNS = 50;
/** `where` entries and `orderBy` entries one query may give. */
export const MAX_WHERE_EXPRESSIONS = 50;
export const MAX_ORDER_EXPRESSIONS = 10;

/** The longest `select`, `where` or `orderBy` entry (HogQL's own expression cap, shared/hogql). */
const EXPRESSION_CHARS = 10_000;

/**
 * PostHog's EventsQuery (posthog/schema.py). Loose: fields this service ignores because they do not
 * change the result (`response`, `modifiers`, `tags`, ...) pass; the ones that would change it and are
 * not applied are refused by the runner, naming the field (shared/domain/query/events-shape.ts).
 */
export const eventsQuery = v.looseObject({
  kind: v.literal('EventsQuery'),
  select: v.optional(
    v.pipe(
      v.array(text(EXPRESSION_CHARS)),
      v.maxLength(MAX_SELECT_COLUMNS, `At most ${MAX_SELECT_COLUMNS} columns may be selected.`),
    ),
  ),
  event: v.optional(v.nullable(text(400))),
  /** Parsed like a trend's property filters (event properties), in the runner. */
  properties: v.optional(v.unknown()),
  after: v.optional(v.nullable(text(100))),
  before: v.optional(v.nullable(text(100))),
  /** HogQL boolean expressions, ANDed (one with an aggregate filters the groups). */
  where: v.optional(
    v.nullable(
      v.pipe(
        v.array(text(EXPRESSION_CHARS)),
        v.maxLength(MAX_WHERE_EXPRESSIONS, `At most ${MAX_WHERE_EXPRESSIONS} "where" expressions.`),
      ),
    ),
  ),
  orderBy: v.optional(
    v.pipe(
      v.array(text(EXPRESSION_CHARS)),
      v.maxLength(MAX_ORDER_EXPRESSIONS, `At most ${MAX_ORDER_EXPRESSIONS} orders.`),
    ),
  ),
  /** 0 is PostHog's default page (its paginator reads a limit of 0 as none given). */
  limit: v.optional(integerIn(0, MAX_EVENTS_LIMIT, `The limit may be at most ${MAX_EVENTS_LIMIT}.`)),
  offset: v.optional(integerIn(0, MAX_EVENTS_OFFSET, `The offset may be at most ${MAX_EVENTS_OFFSET}.`)),
  personId: v.optional(v.nullable(v.union([text(100), v.number()]))),
});
export type EventsQuery = v.InferOutput<typeof eventsQuery>;
