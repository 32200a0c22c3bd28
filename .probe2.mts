import { readFileSync } from 'node:fs';
const info = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const n = Number(process.argv[3]);
const body = JSON.stringify({ api_key: info.project_token, batch: Array.from({ length: n }, (_, i) => ({
  event: 'probe big', distinct_id: `large-${i % 200}`, timestamp: new Date(Date.UTC(2024, 4, 1, 11, 0, 0, i)).toISOString(),
  properties: { $current_url: `https://example.com/products/${i % 400}/details?ref=newsletter`, $browser: i % 2 ? 'Chrome' : 'Firefox', $os: i % 3 ? 'Mac OS X' : 'Windows', $session_id: `0190a1b2-c3d4-7e5f-8a9b-${String(i % 997).padStart(12, '0')}`, amount: i % 13, plan: i % 4 ? 'free' : 'paid', $lib: 'posthog-node', $lib_version: '4.2.1' } })) });
const t = performance.now();
const res = await fetch(`${info.base_url}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
console.log('status', res.status, Math.round(performance.now() - t), 'ms', body.length, (await res.text()).slice(0, 300));
