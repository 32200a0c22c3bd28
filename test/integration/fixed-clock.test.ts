// Set before anything reads the config: the local runtime reads ANALYTICS_FIXED_NOW once per process.
process.env.ANALYTICS_FIXED_NOW = '2024-03-10T01:59:59.250Z';

import { describe, expect, it } from 'vitest';
import { newKey, useApi } from '../support/api.ts';

const api = useApi();

describe('the one clock under ANALYTICS_FIXED_NOW', () => {
  it('stamps what the API creates and updates with the frozen time, and time-orders ids by it', async () => {
    const { key } = await newKey();
    const c = api.as(key);
    const created = await c.post('/api/organizations', { name: 'Frozen' });
    expect(created.body.created_at).toBe('2024-03-10T01:59:59.250Z');
    expect(created.body.updated_at).toBe('2024-03-10T01:59:59.250Z');
    const idMs = parseInt(created.body.id.replace(/-/g, '').slice(0, 12), 16);
    expect(new Date(idMs).toISOString()).toBe('2024-03-10T01:59:59.250Z');
    const patched = await c.patch(`/api/organizations/${created.body.id}`, { name: 'Still frozen' });
    expect(patched.body.updated_at).toBe('2024-03-10T01:59:59.250Z');
  });
});
