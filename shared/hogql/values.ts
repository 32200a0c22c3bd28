/**
 * Runtime values of HogQL expressions, as ClickHouse types them, in JS form:
 * - `null` (Nullable), `boolean` (Bool; comparisons yield booleans, arithmetic reads them as 0/1),
 *   `number` (Int and Float64: one JS number; integer-ness is read from the value where ClickHouse's
 *   result type depends on it), `string`;
 * - `HogDate` (Date: a calendar day), `HogDateTime` (DateTime64: an instant and the time zone it is
 *   shown in), arrays (`HogValue[]`), `HogTuple`.
 * Property values read from JSON keep their JSON type (a number stays a number); objects are read
 * as their JSON text, as HogQL's JSONExtractRaw would give them.
 */
export class HogDate {
  /** Days since 1970-01-01. */
  constructor(readonly days: number) {}
}

export class HogDateTime {
  constructor(
    /** Milliseconds since the epoch (UTC). */
    readonly ms: number,
    /** IANA zone it is displayed and truncated in (the project's, unless toTimeZone changed it). */
    readonly timezone: string,
  ) {}
}

export class HogTuple {
  constructor(readonly items: readonly HogValue[]) {}
}

export type HogValue = null | boolean | number | string | HogDate | HogDateTime | HogTuple | readonly HogValue[];

/** What a function may read besides its arguments. */
export interface EvalContext {
  /** The project's time zone: DateTime values are shown and truncated in it. */
  timezone: string;
  /** The request's clock (for `now()` / `today()`). */
  now: Date;
}
