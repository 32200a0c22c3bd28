import * as v from 'valibot';

/** Parameters that steer the request itself rather than the trend. */
const CONTROL = new Set(['format', 'refresh', 'personal_api_key']);

/** GET: every trend parameter arrives as a string (structured ones JSON-encoded); the engine validates them. */
export const trendGetQuery = v.pipe(
  v.record(v.string(), v.string()),
  v.transform((q) => ({
    trend: Object.fromEntries(Object.entries(q).filter(([k]) => !CONTROL.has(k))) as Record<string, unknown>,
    refresh: q.refresh === 'true' || q.refresh === '1',
  })),
);

export const trendPostQuery = v.object({ refresh: v.optional(v.picklist(['true', 'false', '1', '0'])) });
export const trendPostBody = v.record(v.string(), v.unknown());
