import { describe, expect, it } from 'vitest';
import { TIMELINE_POINTS, type TimelinePoint, timeline } from '#shared/domain/timeline.ts';
import { ValidationError } from '#shared/errors.ts';

const point = (i: number): TimelinePoint => ({
  timestamp: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
  properties: { n: i },
  changed_keys: [i % 2 ? 'odd' : 'even'],
  source: 'event',
  event: '$set',
  event_uuid: null,
  actor: null,
});

describe('properties timeline', () => {
  it('reads one point past the cap, never the whole history', async () => {
    const limits: number[] = [];
    const answer = await timeline({}, async ({ limit }) => {
      limits.push(limit);
      return Array.from({ length: 3 }, (_, i) => point(i));
    });
    expect(limits).toEqual([TIMELINE_POINTS + 1]);
    expect(answer.points).toHaveLength(3);
    expect(answer.crucial_property_keys).toEqual(['even', 'odd']);
  });

  it('answers exactly the cap, and a 400 naming the range one change past it', async () => {
    const read = (n: number) => async () => Array.from({ length: n }, (_, i) => point(i));
    expect((await timeline({}, read(TIMELINE_POINTS))).points).toHaveLength(TIMELINE_POINTS);
    const error = await timeline({}, read(TIMELINE_POINTS + 1)).catch((e) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/More than 1,000 property changes between from and to/);
    expect(error.attr).toBe('from');
    expect((await timeline({ from: point(0).timestamp }, read(TIMELINE_POINTS + 1)).catch((e) => e)).attr).toBe('to');
  });
});
