import type { Reply } from './api.ts';

/**
 * Sends like a PostHog SDK: a 503 `service_unavailable` (the service's answer when DynamoDB is too
 * slow or away; it carries Retry-After) is retried after a pause, up to `attempts` times. Only used
 * where a loaded DynamoDB Local could make one table call outlast the bounded SDK timeouts; every
 * retry is counted in `retried` so a run can report them.
 */
export async function retryingUnavailable(
  send: () => Promise<Reply>,
  attempts = 4,
  counter?: { retried: number },
): Promise<Reply> {
  for (let attempt = 1; ; attempt += 1) {
    const res = await send();
    if (res.status !== 503 || res.body?.code !== 'service_unavailable' || attempt >= attempts) return res;
    if (counter) counter.retried += 1;
    await new Promise((r) => setTimeout(r, 500 * attempt));
  }
}
