/**
 * A properties timeline (a person's or a group's): one point per recorded change in a range. Anyone
 * with the project token can record changes without end, so one answer reads at most
 * TIMELINE_POINTS of them and asks for a narrower range past that, never reading the whole history.
 */
import { ValidationError } from '../errors.ts';

export const TIMELINE_POINTS = 1_000;

export interface TimelinePoint {
  timestamp: string;
  properties: Record<string, unknown>;
  changed_keys: string[];
  source: string;
  event: string | null;
  event_uuid: string | null;
  actor: string | null;
}

export interface TimelineRange {
  from?: string;
  to?: string;
}

/** Reads `TIMELINE_POINTS + 1` changes of the range; one too many is a 400 naming the range. */
export async function timeline(
  range: TimelineRange,
  read: (window: TimelineRange & { limit: number }) => Promise<TimelinePoint[]>,
): Promise<{ points: TimelinePoint[]; crucial_property_keys: string[] }> {
  const points = await read({ ...range, limit: TIMELINE_POINTS + 1 });
  if (points.length > TIMELINE_POINTS)
    throw new ValidationError(
      `More than ${TIMELINE_POINTS.toLocaleString('en')} property changes between from and to: narrow the range.`,
      range.from ? 'to' : 'from',
    );
  return { points, crucial_property_keys: [...new Set(points.flatMap((p) => p.changed_keys))].sort() };
}
