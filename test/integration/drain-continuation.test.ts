import { describe, expect, it } from 'vitest';
import { drainPersonDeletions, type DeletionMessage } from '#shared/domain/person-deletions.ts';

function queue(messages: DeletionMessage[]) {
  const log: string[] = [];
  return {
    log,
    deps: (timeLeft: () => number) => ({
      receive: async () => {
        log.push('receive');
        return messages.splice(0, 2);
      },
      acknowledge: async (h: string) => void log.push(`ack ${h}`),
      release: async (h: string, delay: number) => void log.push(`release ${h} ${delay}`),
      timeLeftMs: timeLeft,
      continueLater: async () => void log.push('continue'),
    }),
  };
}

const valid = (n: number): DeletionMessage => ({
  body: JSON.stringify({
    project_id: 987_001,
    person_id: n,
    distinct_ids: [`gone-${n}`],
    requested_at: '2024-01-01T00:00:00Z',
  }),
  receiptHandle: `m${n}`,
  receiveCount: 1,
});

describe('drain across invocations', () => {
  it('stops taking messages when the invocation runs short and hands over to a continuation', async () => {
    let left = 10 * 60_000;
    const q = queue([valid(1), valid(2), valid(3), valid(4), valid(5)]);
    const summary = await drainPersonDeletions(
      q.deps(() => {
        left -= 4 * 60_000; // each receive round "takes" four minutes
        return left;
      }),
    );
    // 10 min left: rounds start at 6 and 2 minutes left; the third sees less than the 1-minute margin.
    expect(summary).toMatchObject({ processed: 4, continued: true });
    expect(q.log.filter((l) => l === 'receive')).toHaveLength(2);
    expect(q.log.at(-1)).toBe('continue');
    expect(q.log.filter((l) => l.startsWith('ack')).sort()).toEqual(['ack m1', 'ack m2', 'ack m3', 'ack m4']);
  });

  it('drains to empty without a continuation when time allows, releasing a malformed message at once', async () => {
    const q = queue([valid(1), { body: 'nonsense', receiptHandle: 'bad', receiveCount: 2 }, valid(3)]);
    const summary = await drainPersonDeletions(q.deps(() => 600_000));
    expect(summary).toMatchObject({ processed: 2, failed: 1, continued: false });
    // Messages of one receive are worked on concurrently, so only the set per run is fixed.
    expect(q.log.filter((l) => l === 'receive')).toHaveLength(3);
    expect(q.log.filter((l) => l !== 'receive').sort()).toEqual(['ack m1', 'ack m3', 'release bad 0']);
  });
});
