import * as v from 'valibot';

/**
 * Query-string building blocks: values arrive as strings. Request shapes, so they live with the
 * schemas (shared/http/ builds the `next`/`previous` links of a page; it does not define what a page asks for).
 */
export const queryInteger = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  v.pipe(
    v.string(),
    v.regex(/^\d+$/, 'A valid integer is required.'),
    v.transform(Number),
    v.minValue(min, `Ensure this value is greater than or equal to ${min}.`),
    v.maxValue(max, `Ensure this value is less than or equal to ${max}.`),
  );

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** `limit` (default 100) and `offset` (default 0) as DRF's LimitOffsetPagination reads them. */
export const pageQuery = {
  limit: v.optional(queryInteger(1, MAX_PAGE_SIZE), String(DEFAULT_PAGE_SIZE)),
  offset: v.optional(queryInteger(0), '0'),
};
