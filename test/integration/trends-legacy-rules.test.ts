// The legacy trend rules of trend-semantics.md about series order and formulas, over HTTP.
process.env.ANALYTICS_FIXED_NOW = '2024-03-12T12:00:00Z';

import { beforeAll, describe, expect, it } from 'vitest';
import { readRollups } from '#shared/db/rollups.ts';
import { eventually, newProject, useApi, type Client } from '../support/api.ts';

const api = useApi();

const ev = (event: string, distinct_id: string, timestamp: string, properties: Record<string, unknown> = {}) => ({
  event,
  distinct_id,
  timestamp,
  properties,
});

let c: Client;
let path: string;
let actionId: number;

beforeAll(async () => {
  const p = await newProject(api.as);
  c = api.as(p.key);
  const batch = [
    ev('$pageview', 'a', '2024-03-10T09:00:00Z', { $browser: 'Chrome' }),
    ev('$pageview', 'a', '2024-03-11T09:00:00Z', { $browser: 'Chrome' }),
    ev('$pageview', 'b', '2024-03-11T10:00:00Z', {}),
    ev('$pageview', 'b', '2024-03-12T08:00:00Z', {}),
    ev('$pageview', 'b', '2024-03-12T09:00:00Z', {}),
    ev('signed up', 'b', '2024-03-12T08:30:00Z'),
  ];
  expect((await api.as().post('/batch', { api_key: p.token, batch })).body.accepted).toBe(batch.length);
  await eventually(async () => {
    const counted = [...(await readRollups(p.projectId, null, '2024-03-01T00', '2024-03-31T23')).values()];
    expect(counted.reduce((a, b) => a + b, 0)).toBe(batch.length);
  });
  const action = await c.post(`/api/environments/${p.projectId}/actions/`, {
    name: 'Signups',
    steps: [{ event: 'signed up' }],
  });
  expect(action.status).toBe(201);
  actionId = action.body.id;
  path = `/api/environments/${p.projectId}/insights/trend/`;
});

const range = { date_from: '2024-03-10', date_to: '2024-03-12' };

describe('series order when `order` is 0 or absent (legacy entity order)', () => {
  it('puts the actions list before the events list, so formula letter A is the action', async () => {
    const res = await c.post(path, { events: [{ id: '$pageview' }], actions: [{ id: actionId }], ...range });
    expect(res.status).toBe(200);
    expect(res.body.result.map((r: any) => [r.label, r.action.type, r.action.order, r.count])).toEqual([
      ['Signups', 'actions', 0, 1],
      ['$pageview', 'events', 1, 5],
    ]);
    const formula = await c.post(path, {
      events: [{ id: '$pageview' }],
      actions: [{ id: actionId }],
      formula: 'A * 10 + B',
      ...range,
    });
    expect(formula.body.result[0].data).toEqual([1, 2, 12]);
  });

  it('reads order 0 as no order: the list order stays', async () => {
    const res = await c.post(path, { events: [{ id: 'signed up', order: 0 }, { id: '$pageview' }], ...range });
    expect(res.body.result.map((r: any) => r.label)).toEqual(['signed up', '$pageview']);
    // A positive order still sorts after the entries without one.
    const ordered = await c.post(path, {
      events: [
        { id: 'signed up', order: 1 },
        { id: '$pageview', order: 0 },
      ],
      actions: [{ id: actionId }],
      ...range,
    });
    expect(ordered.body.result.map((r: any) => r.label)).toEqual(['Signups', '$pageview', 'signed up']);
  });
});

describe('formula with an aggregated display, a series without data', () => {
  it.each(['BoldNumber', 'ActionsPie', 'ActionsTable'])(
    '%s: one row labelled Formula (...) with aggregated_value, the empty series counting 0',
    async (display) => {
      const res = await c.post(path, {
        events: [
          { id: '$pageview' },
          { id: 'never sent' },
          { id: '$pageview', math: 'avg', math_property: 'no such property' },
        ],
        formula: 'A + B + C',
        display,
        ...range,
      });
      expect(res.status).toBe(200);
      expect(res.body.result).toHaveLength(1);
      expect(res.body.result[0]).toMatchObject({ label: 'Formula (A + B + C)', aggregated_value: 5, action: null });
    },
  );

  it('also from the hourly rollups, when no series has data, and for non-numeric property values', async () => {
    const rollups = await c.post(path, {
      events: [{ id: '$pageview' }, { id: 'never sent' }],
      formula: 'A - B',
      display: 'BoldNumber',
      ...range,
    });
    expect(rollups.headers.get('x-trend-source')).toBe('rollups');
    expect(rollups.body.result).toEqual([expect.objectContaining({ label: 'Formula (A - B)', aggregated_value: 5 })]);
    const none = await c.post(path, {
      events: [
        { id: 'never sent', math: 'dau' },
        { id: 'nor this', math: 'median', math_property: 'x' },
      ],
      actions: [{ id: actionId, math: 'max', math_property: '$browser' }],
      formula: 'A + B + C',
      display: 'ActionsTable',
      ...range,
    });
    expect(none.body.result).toEqual([expect.objectContaining({ label: 'Formula (A + B + C)', aggregated_value: 0 })]);
  });
});

describe('formula with a breakdown', () => {
  it('labels the no-value row with the raw $$_posthog_breakdown_null_$$ (after the values)', async () => {
    const res = await c.post(path, {
      events: [{ id: '$pageview' }],
      formula: 'A * 2',
      breakdown: '$browser',
      ...range,
    });
    expect(res.body.result.map((r: any) => [r.label, r.breakdown_value, r.count])).toEqual([
      ['Chrome', 'Chrome', 4],
      ['$$_posthog_breakdown_null_$$', '$$_posthog_breakdown_null_$$', 6],
    ]);
  });
});
