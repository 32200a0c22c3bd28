import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { QUEUES } from '#shared/queue-settings.ts';
import { ensureQueues } from '../../infra/local/queues.ts';

/**
 * Runs the calling test file alone among the files that name the same resource, for shared state no
 * test can scope to itself: the batch-export scheduler's tick runs every organization's due runs, so a
 * tick in one file would run (and fail, with its own writer) the runs another file has just queued.
 * The lock is a directory in the run's own data directory (mkdir is atomic): a killed run leaves none.
 * Call it before the file's other hooks.
 */
export function exclusiveFile(resource: string, waitMs = 15 * 60_000): void {
  beforeAll(() => acquire(resource, waitMs), waitMs + 5_000);
  afterAll(() => release(resource));
}

/**
 * The same lock for one block of a test that cannot hold it for its whole file (a browser walk that
 * ticks the scheduler once): it waits for whichever file holds the resource to finish.
 */
export async function exclusively<T>(resource: string, work: () => Promise<T>, waitMs = 10 * 60_000): Promise<T> {
  await acquire(resource, waitMs);
  try {
    return await work();
  } finally {
    await release(resource);
  }
}

const lockOf = (resource: string) => join(inject('dataDir'), 'locks', resource);

async function acquire(resource: string, waitMs: number): Promise<void> {
  const lock = lockOf(resource);
  await mkdir(join(lock, '..'), { recursive: true });
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await mkdir(lock);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    if (Date.now() > deadline) throw new Error(`Waited ${waitMs} ms for ${resource}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const release = (resource: string) => rm(lockOf(resource), { recursive: true, force: true });

/**
 * Gives the calling file deletion queues of its own: its deletes with `delete_events` may succeed and
 * queue requests, which must never reach the run's deletion queue (test/integration/person-deletion.test.ts
 * counts exactly what its drain processes there). Config reads queue URLs on first use, after this hook.
 */
export function ownDeletionQueues(tag: string): void {
  beforeAll(async () => {
    const own = await ensureQueues(inject('sqsEndpoint'), `analytics-${tag}-${randomUUID().slice(0, 8)}`);
    process.env[QUEUES.person_deletions.urlEnv] = own.person_deletions;
    process.env[QUEUES.drain_continuations.urlEnv] = own.drain_continuations;
  });
}
