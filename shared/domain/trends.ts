import { createHash } from 'node:crypto';
import { now as clockNow } from '../clock.ts';
import { readEventsInRange } from '../db/events.ts';
import { getPersons, personIdsOf } from '../db/persons.ts';
import { firstEventAt } from '../db/projects.ts';
import { readRollups } from '../db/rollups.ts';
import { readTrendCache, writeTrendCache } from '../db/trend-cache.ts';
import { ValidationError } from '../errors.ts';
import {
  canUseHourlyRollups,
  computeTrend,
  computeTrendFromHourly,
  eventsNeeded,
  needsEventNames,
  parseTrendRequest,
  resolveDateRange,
  trendToCsv,
  type ActionDefinition,
  type ProjectSettings,
  type TrendEvent,
  type TrendQuery,
  type TrendResponse,
} from '../trends/index.ts';
import { actionDefinitions } from './actions.ts';
import { findProject, projectSettings } from './projects.ts';
import type { MembershipRecord } from './records.ts';

/** How long a computed trend is served from the cache (PostHog caches insights too; `refresh=true` bypasses). */
export const TREND_CACHE_SECONDS = 60;

export interface TrendAnswer {
  body: TrendResponse & { is_cached: boolean; last_refresh: string; next: null };
  csv: () => string;
  /** Which path computed it (for logs and benchmarks): hourly rollups, raw events, or the cache. */
  source: 'rollups' | 'events' | 'cache';
}

const hourKey = (d: Date) => d.toISOString().slice(0, 13);

/**
 * PostHog's legacy trend: the request is validated by the engine, then answered from the cache, from
 * hourly rollups (unfiltered totals: cost independent of the number of events), or from the raw
 * event partitions of the range read in parallel, with persons resolved for person maths/filters.
 */
export async function computeProjectTrend(membership: MembershipRecord, projectId: number, raw: Record<string, unknown>, refresh: boolean): Promise<TrendAnswer> {
  const query = parseTrendRequest(raw);
  const actionIds = query.series.flatMap((s) => (s.type === 'actions' ? [Number(s.id)] : []));
  const [project, actions, firstAt] = await Promise.all([findProject(membership, projectId), actionDefinitions(projectId, actionIds), firstEventAt(projectId)]);
  for (const s of query.series) {
    if (s.type === 'actions' && !actions.some((a) => a.id === Number(s.id))) {
      throw new ValidationError(`Action ${String(s.id)} does not exist.`, `actions__${s.index}__id`, 'does_not_exist');
    }
  }
  const settings = projectSettings(project);
  const now = clockNow();
  const hash = createHash('sha256').update(JSON.stringify({ query, settings, actions, firstAt })).digest('base64url');
  if (!refresh) {
    const cached = await readTrendCache(projectId, hash, now);
    if (cached) {
      const body = { ...(cached.body as TrendResponse), is_cached: true, last_refresh: cached.last_refresh, next: null as null };
      return { body, csv: () => trendToCsv(body), source: 'cache' };
    }
  }
  const fast = canUseHourlyRollups(query, settings, now, firstAt);
  const response = fast ? await fromRollups(projectId, query, settings, now, firstAt) : await fromEvents(projectId, query, settings, actions, now, firstAt);
  await writeTrendCache(projectId, hash, response, now, TREND_CACHE_SECONDS);
  const body = { ...response, is_cached: false, last_refresh: now.toISOString(), next: null as null };
  return { body, csv: () => trendToCsv(body), source: fast ? 'rollups' : 'events' };
}

async function fromRollups(projectId: number, query: TrendQuery, settings: ProjectSettings, now: Date, firstAt: Date | undefined) {
  const needed = eventsNeeded(query, resolveDateRange(query, settings, now, firstAt));
  const hourly = await Promise.all(
    query.series.map((s) => readRollups(projectId, s.id === null ? null : String(s.id), hourKey(needed.from), hourKey(needed.to))),
  );
  return computeTrendFromHourly(query, { hourly, project: settings, now, firstEventAt: firstAt });
}

async function fromEvents(projectId: number, query: TrendQuery, settings: ProjectSettings, actions: ActionDefinition[], now: Date, firstAt: Date | undefined) {
  const range = resolveDateRange(query, settings, now, firstAt);
  const needed = eventsNeeded(query, range);
  const stored = range.buckets.length ? await readEventsInRange(projectId, needed.from, needed.to, needsEventNames(query, actions)) : [];
  const events = await withPersons(projectId, stored);
  return computeTrend(query, { events, project: settings, actions, now, firstEventAt: firstAt });
}

/** Each event's person (merged distinct ids share one) and that person's current properties. */
async function withPersons(projectId: number, stored: Awaited<ReturnType<typeof readEventsInRange>>): Promise<TrendEvent[]> {
  const ids = await personIdsOf([...new Set(stored.map((e) => e.distinct_id))].map((distinctId) => ({ projectId, distinctId })));
  const persons = new Map((await getPersons(projectId, [...ids.values()])).map((p) => [p.id, p]));
  return stored.map((e) => {
    const personId = ids.get(`${projectId}#${e.distinct_id}`);
    const person = personId === undefined ? undefined : persons.get(personId);
    return {
      uuid: e.uuid,
      event: e.event,
      distinct_id: e.distinct_id,
      person_id: person ? String(person.id) : e.distinct_id,
      timestamp: e.timestamp,
      properties: e.properties,
      person_properties: person?.properties ?? {},
    };
  });
}
