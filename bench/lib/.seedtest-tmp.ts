import { randomUUID } from 'node:crypto';
import { eventItem } from '#shared/db/events.ts';
import { startChildStack } from './local-stack.ts';
import { batchWriteAll, localDynamo } from './dynamo-seed.ts';
import { loadavg } from 'node:os';
const stack = await startChildStack();
const client = localDynamo(stack.info.dynamodb_endpoint);
try {
  for (const [inFlight, n, prefix] of [[16, 5000, 'BENCHRAW#'], [32, 5000, 'BENCHRAW#'], [8, 5000, 'BENCHRAW#'], [16, 5000, '']] as const) {
    const now = Date.now();
    const items = Array.from({ length: n }, (_, i) => {
      const it = eventItem({ uuid: randomUUID(), event: '$pageview', distinct_id: `u${i % 2000}`, project_id: 999, properties: { $browser: 'Chrome', $os: 'Windows', $current_url: 'https://example.com/docs/12', amount: 12.5, $session_id: 's-1-2', $lib: 'web' }, timestamp: new Date(now - Math.random() * 30 * 86400000).toISOString(), inserted_at: new Date(now).toISOString() });
      return { ...it, pk: prefix + String(it.pk) };
    });
    const t = performance.now();
    await batchWriteAll(client, stack.info.table_name, items, { inFlight });
    console.log(`inFlight ${inFlight} prefix '${prefix}': ${(n / (performance.now() - t) * 1000).toFixed(0)} items/s, load ${loadavg()[0].toFixed(2)}`);
  }
} finally { client.destroy(); await stack.stop(); }
