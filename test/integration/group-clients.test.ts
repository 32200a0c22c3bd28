import { PostHog } from 'posthog-node';
import { describe, expect, it } from 'vitest';
import { eventually, newProject, useApi } from '../support/api.ts';

// posthog-node as a B2B backend uses it: groupIdentify, then capture with `groups`; the groups are
// listed by /groups/ and counted by a unique_group trend and a group breakdown. (posthog-js's
// posthog.group() in Chromium: test/integration/browser-sdk.test.ts.)
const api = useApi();

describe('groups from posthog-node, end to end', () => {
  it('groupIdentify and capture with groups: /groups/ lists them, a unique_group trend counts them', async () => {
    const { key, projectId, token } = await newProject(api.as);
    const c = api.as(key);
    const client = new PostHog(token, { host: api.baseUrl, flushAt: 20, flushInterval: 0, fetchRetryCount: 0 });
    const errors: unknown[] = [];
    client.on('error', (e) => errors.push(e));
    client.groupIdentify({ groupType: 'company', groupKey: 'acme', properties: { name: 'Acme', plan: 'enterprise' } });
    client.groupIdentify({ groupType: 'company', groupKey: 'globex', properties: { name: 'Globex', plan: 'free' } });
    // acme: ada twice, bob once; globex: cat; dan has no company.
    client.capture({ distinctId: 'ada', event: 'report run', groups: { company: 'acme' } });
    client.capture({ distinctId: 'ada', event: 'report run', groups: { company: 'acme' } });
    client.capture({ distinctId: 'bob', event: 'report run', groups: { company: 'acme' } });
    client.capture({ distinctId: 'cat', event: 'report run', groups: { company: 'globex' } });
    client.capture({ distinctId: 'dan', event: 'report run' });
    await client.shutdown();
    expect(errors).toEqual([]);

    await eventually(async () => {
      const res = await c.get(`/api/projects/${projectId}/groups/?group_type_index=0`);
      expect(
        res.body.results
          .map((g: any) => [g.group_key, g.group_properties.name])
          .sort((a: string[], b: string[]) => a[0]!.localeCompare(b[0]!)),
      ).toEqual([
        ['acme', 'Acme'],
        ['globex', 'Globex'],
      ]);
    }, 15_000);

    const path = `/api/projects/${projectId}/insights/trend/`;
    await eventually(async () => {
      const unique = await c.post(path, {
        events: [{ id: 'report run', math: 'unique_group', math_group_type_index: 0 }],
        date_from: '-1d',
        display: 'BoldNumber',
        refresh: true,
      });
      expect(unique.body.result[0].aggregated_value).toBe(2);
      const byPlan = await c.post(path, {
        events: [{ id: 'report run' }],
        breakdown_type: 'group',
        breakdown: 'plan',
        breakdown_group_type_index: 0,
        date_from: '-1d',
        display: 'ActionsTable',
        refresh: true,
      });
      expect(byPlan.body.result.map((r: any) => [r.breakdown_value, r.aggregated_value])).toEqual([
        ['enterprise', 3],
        ['$$_posthog_breakdown_null_$$', 1],
        ['free', 1],
      ]);
    }, 15_000);
  }, 60_000);
});
