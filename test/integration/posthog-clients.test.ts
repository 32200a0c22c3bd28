import { deflateRawSync } from 'node:zlib';
import { PostHog } from 'posthog-node';
import { describe, expect, it } from 'vitest';
import { getPerson, personIdOf } from '#shared/db/persons.ts';
import { readRollups } from '#shared/db/rollups.ts';
import { eventually, newProject, useApi } from '../support/api.ts';

const api = useApi();

async function personOf(projectId: number, distinctId: string) {
  const id = await personIdOf(projectId, distinctId);
  if (id === undefined) throw new Error(`no person for ${distinctId} yet`);
  return (await getPerson(projectId, id))!;
}

const today = () => new Date().toISOString().slice(0, 10);

describe('posthog-node against this service', () => {
  it('captures, identifies and aliases; persons and rollups follow', async () => {
    const { projectId, token } = await newProject(api.as);
    const client = new PostHog(token, { host: api.baseUrl, flushAt: 5, flushInterval: 0, fetchRetryCount: 0 });
    const errors: unknown[] = [];
    client.on('error', (e) => errors.push(e));

    client.capture({
      distinctId: 'anon-7',
      event: 'page viewed',
      properties: { path: '/pricing', $set_once: { first_path: '/pricing' } },
    });
    client.capture({ distinctId: 'anon-7', event: 'page viewed', properties: { path: '/signup' } });
    client.capture({ distinctId: 'ada@example.com', event: 'signed up', properties: { plan: 'pro' } });
    client.identify({
      distinctId: 'ada@example.com',
      properties: { $set: { email: 'ada@example.com', name: 'Ada' }, $anon_distinct_id: 'anon-7' },
    });
    client.alias({ distinctId: 'ada@example.com', alias: 'crm-1815' });
    await client.shutdown();
    expect(errors).toEqual([]);

    const person = await eventually(async () => {
      const p = await personOf(projectId, 'crm-1815');
      expect(p.distinct_ids.sort()).toEqual(['ada@example.com', 'anon-7', 'crm-1815']);
      expect(p.properties).toMatchObject({ email: 'ada@example.com', name: 'Ada', first_path: '/pricing' });
      return p;
    });
    expect((await personOf(projectId, 'anon-7')).id).toBe(person.id);

    await eventually(async () => {
      const views = [...(await readRollups(projectId, 'page viewed', `${today()}T00`, `${today()}T23`)).values()];
      expect(views.reduce((a, b) => a + b, 0)).toBe(2);
      const all = [...(await readRollups(projectId, null, `${today()}T00`, `${today()}T23`)).values()];
      expect(all.reduce((a, b) => a + b, 0)).toBe(5);
    });
  });
});

describe('posthog-js request shapes', () => {
  it('accepts a form-encoded base64 body (compression=base64) and a bare JSON array with properties.token', async () => {
    const { projectId, token } = await newProject(api.as);
    const events = [
      {
        event: '$pageview',
        properties: { token, distinct_id: 'web-1', $current_url: 'https://x.io/' },
        timestamp: new Date().toISOString(),
      },
    ];
    const data = Buffer.from(JSON.stringify(events)).toString('base64');
    const form = await api.as().request('POST', `/e/?ip=1&_=${Date.now()}&ver=1.200.0`, {
      raw: `data=${encodeURIComponent(data)}&compression=base64`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(200);
    expect(form.body).toMatchObject({ status: 1, accepted: 1 });

    const plain = await api.as().request('POST', '/i/v0/e/', {
      raw: JSON.stringify([{ event: '$pageleave', properties: { token, distinct_id: 'web-1' } }]),
      headers: { 'content-type': 'application/json' },
    });
    expect(plain.body).toMatchObject({ accepted: 1 });
    await eventually(async () => expect((await personOf(projectId, 'web-1')).distinct_ids).toEqual(['web-1']));
  });

  it('refuses an unsupported deflate body clearly instead of storing garbage', async () => {
    const { token } = await newProject(api.as);
    const res = await api.as().request('POST', '/batch/', {
      raw: deflateRawSync(JSON.stringify({ api_key: token, batch: [{ event: 'x', distinct_id: 'y' }] })),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
  });
});
