import { createHash } from 'node:crypto';
import { FUTURE_CUTOFF_MS } from '../capture/timestamps.ts';
import { now as clockNow } from '../clock.ts';
import { trendToCsv } from '../csv.ts';
import { getPersons, personIdsOf } from '../db/persons.ts';
import { answersGeneration, firstEventAt } from '../db/projects.ts';
import { readRollups } from '../db/rollups.ts';
import { readTrendCache, writeTrendCache } from '../db/result-cache.ts';
import type { DayCounterReader } from '../db/segments.ts';
import {
  canUseHourlyRollups,
  computeTrendFromHourly,
  eventsToRead,
  needsEventNames,
  needsPersons,
  eventPropertiesUsed,
  groupTypesRead,
  parseTrendRequest,
  resolveDateRange,
  type ActionDefinition,
  type DateRange,
  type ProjectSettings,
  type TrendResponse,
  type TrendsModel,
} from '../trends/index.ts';
import { unknownAction } from '../trends/compute.ts';
import { checkResponseBytes, type ReadWindow } from '../trends/limits.ts';
import {
  type ColumnSource,
  computeTrendFromColumns,
  distinctIdsOf,
  distinctIdsOnly,
  storedSource,
  type PersonJoin,
} from '../trends/columnar/index.ts';
import { actionDefinitions } from './actions.ts';
import { sharedDayCounters } from './day-counters.ts';
import { readTrendRows, type TrendEventSource } from './event-days.ts';
import { groupLookup } from './trend-groups.ts';
import { LakeTooSlow } from '../lake/engine.ts';
import { lakeTrend, type QueryEngine } from './lake-trends.ts';
import { findProject, projectSettings } from './projects.ts';
import { checkTrendCohorts, loadCohortMembers, type NamedCohortRef } from './trend-cohorts.ts';
import type { MembershipRecord } from '../db/organizations.ts';
import type { ProjectRecord } from '../db/projects.ts';

/** How long a computed trend is served from the cache (PostHog caches insights too; `refresh=true` bypasses). */
export const TREND_CACHE_SECONDS = 60;

/**
 * How long the legacy endpoint waits for the lake engine when its caller gives no deadline (the
 * handlers pass the request's: the function's time less a margin): past it a 503 that says to ask
 * /query asynchronously (shared/lake/engine.ts LakeTooSlow).
 */
export const LEGACY_LAKE_BUDGET_MS = 25_000;

export interface TrendAnswer {
  body: TrendResponse & { is_cached: boolean; last_refresh: string; next: null };
  csv: () => string;
  /** Which path computed it (for logs and benchmarks): hourly rollups, compacted segments and/or raw events, the lake engine (with the in-process one), or the cache. */
  source: 'rollups' | TrendEventSource | 'lake' | 'cache';
  /** Where the time went, as a `Server-Timing` header value (`read;dur=12.3;desc="8 days", compute;dur=4.5`): the read names the UTC days it covered. */
  timing: string;
}

/** Milliseconds per phase, in order, for the Server-Timing header. */
class Phases {
  private last = performance.now();
  private readonly spent: [string, number, string | undefined][] = [];
  mark(phase: string, desc?: string): void {
    const t = performance.now();
    this.spent.push([phase, t - this.last, desc]);
    this.last = t;
  }
  header(): string {
    return this.spent
      .map(([phase, ms, desc]) => `${phase};dur=${ms.toFixed(1)}${desc === undefined ? '' : `;desc="${desc}"`}`)
      .join(', ');
  }
  /** As PostHog's query `timings`: `k` the phase, `t` seconds. */
  list(): { k: string; t: number }[] {
    return this.spent.map(([phase, ms]) => ({ k: phase, t: ms / 1000 }));
  }
}

const hourKey = (d: Date) => d.toISOString().slice(0, 13);

/**
 * PostHog's legacy trend: the request is validated and converted into the model (parse.ts), then answered from the cache, from
 * hourly rollups (unfiltered totals: cost independent of the number of events), or from the events of
 * the range — compacted day segments where they are exact, raw event partitions elsewhere
 * (event-segments.ts) — with persons resolved only for queries that use them.
 */
export async function computeProjectTrend(
  membership: MembershipRecord,
  projectId: number,
  raw: Record<string, unknown>,
  refresh: boolean,
  /** When the answer is due (epoch ms): the lake engine stops there with a 503 naming /query. */
  deadline: number = Date.now() + LEGACY_LAKE_BUDGET_MS,
): Promise<TrendAnswer> {
  const phases = new Phases();
  const query = parseTrendRequest(raw);
  const [inputs, generation] = await Promise.all([
    prepareTrend(() => findProject(membership, projectId), projectId, query),
    answersGeneration(projectId),
  ]);
  const { settings, actions, firstAt, now } = inputs;
  const hash = createHash('sha256')
    .update(JSON.stringify({ query, settings, actions, firstAt, generation }))
    .digest('base64url');
  phases.mark('setup');
  if (!refresh) {
    const cached = await readTrendCache(projectId, hash, now);
    phases.mark('cache');
    if (cached) {
      const body = {
        ...(cached.body as TrendResponse),
        is_cached: true,
        last_refresh: cached.last_refresh,
        next: null as null,
      };
      return { body, csv: () => trendToCsv(body), source: 'cache', timing: phases.header() };
    }
  }
  const { response, source, engine } = await computeFromStore(projectId, inputs, phases, () => {}, deadline);
  await writeTrendCache(projectId, hash, response, now, TREND_CACHE_SECONDS);
  phases.mark('store');
  const body = {
    ...response,
    is_cached: false,
    last_refresh: now.toISOString(),
    next: null as null,
    ...(engine ? { query_engine: engine } : {}),
  };
  return { body, csv: () => trendToCsv(body), source, timing: phases.header() };
}

/** A trend computed without the legacy trend cache (the query API keeps its own). */
export interface ComputedTrend {
  /** The query the engine answered. */
  query: TrendsModel;
  /** The requested period, resolved in the project's time zone. */
  range: DateRange;
  response: TrendResponse;
  source: 'rollups' | TrendEventSource | 'lake';
  /** The engines that answered, where the lake did (absent: the in-process engine alone). */
  engine?: QueryEngine;
  timings: { k: string; t: number }[];
}

/** A trend on a project the caller has read, answered from the store, neither reading nor writing the trend cache. */
export async function answerTrend(
  project: ProjectRecord,
  query: TrendsModel,
  /** Called between reads and before each batch the engine computes: throws to stop (deadline, cancellation). */
  check: () => void = () => {},
): Promise<ComputedTrend> {
  const phases = new Phases();
  const projectId = project.id;
  const inputs = await prepareTrend(async () => project, projectId, query);
  phases.mark('setup');
  // No deadline of its own: `check` carries the run's (a blocking run past it is handed to the query worker).
  const { response, source, engine } = await computeFromStore(projectId, inputs, phases, check, Infinity);
  return {
    query: inputs.query,
    range: inputs.range,
    response,
    source,
    ...(engine ? { engine } : {}),
    timings: phases.list(),
  };
}

interface TrendInputs {
  query: TrendsModel;
  settings: ProjectSettings;
  actions: ActionDefinition[];
  firstAt: Date | undefined;
  now: Date;
  range: DateRange;
  read: ReadWindow | null;
  /** The cohorts the query names (checked to exist); their members are loaded when events are read. */
  cohorts: NamedCohortRef[];
}

/**
 * The query with what answering it needs: project settings, actions, the range and the days to
 * read. `loadProject` runs beside the other reads (or returns a project already read).
 */
async function prepareTrend(
  loadProject: () => Promise<ProjectRecord>,
  projectId: number,
  query: TrendsModel,
): Promise<TrendInputs> {
  const actionIds = query.series.flatMap((s) => (s.kind === 'ActionsNode' ? [s.id] : []));
  const [project, actions, firstAt] = await Promise.all([
    loadProject(),
    actionDefinitions(projectId, actionIds),
    firstEventAt(projectId),
  ]);
  for (const s of query.series) {
    if (s.kind === 'ActionsNode' && !actions.some((a) => a.id === s.id)) throw unknownAction(s);
  }
  const settings = projectSettings(project);
  const cohorts = await checkTrendCohorts(projectId, query, settings);
  const now = clockNow();
  // The caps (shared/trends/limits.ts) before anything is read: the response's size on the requested
  // range, the days read once the range is clamped to the stored events: from the project's first
  // event, to now + 23 h (capture stores a later time as now).
  const range = resolveDateRange(query, settings, now, firstAt);
  const read = eventsToRead(query, range, firstAt, new Date(now.getTime() + FUTURE_CUTOFF_MS));
  return { query, settings, actions, firstAt, now, range, read, cohorts };
}

async function computeFromStore(
  projectId: number,
  inputs: TrendInputs,
  phases: Phases,
  check: () => void,
  /** When the lake engine must have answered (epoch ms): the legacy endpoint's budget, or Infinity where `check` carries it. */
  lakeDeadline: number,
): Promise<{ response: TrendResponse; source: ComputedTrend['source']; engine?: QueryEngine }> {
  const { query, settings, firstAt, now, read } = inputs;
  // One read of the day counters for the routing decision and the in-process read after it.
  const counters = sharedDayCounters(projectId);
  const computed = canUseHourlyRollups(query, settings, now, firstAt)
    ? {
        response: await fromRollups(projectId, query, read, settings, now, firstAt, phases, check),
        source: 'rollups' as const,
      }
    : ((await fromLake(projectId, inputs, phases, check, lakeDeadline, counters)) ??
      (await fromEvents(projectId, inputs, phases, check, counters)));
  checkResponseBytes(query, Buffer.byteLength(JSON.stringify(computed.response)));
  return computed;
}

/** Above the routing threshold, the closed days current in the lake from the lake engine, the rest in-process (lake-trends.ts). */
async function fromLake(
  projectId: number,
  inputs: TrendInputs,
  phases: Phases,
  check: () => void,
  deadline: number,
  readCounters: DayCounterReader,
) {
  const { query, settings, range, read, actions } = inputs;
  const lakeCheck = () => {
    check();
    if (Date.now() >= deadline) throw new LakeTooSlow();
  };
  const answer = await lakeTrend(
    { projectId, query, settings, range, read, names: needsEventNames(query, actions), readCounters },
    async (sub, window) =>
      (await fromEvents(projectId, { ...inputs, query: sub, read: window }, phases, check, readCounters)).response,
    lakeCheck,
    deadline,
    () => phases.mark('lake_query'),
  );
  if (!answer) return null;
  phases.mark(
    'lake',
    `${answer.engine}: ${answer.buckets.lake} buckets from the lake, ${answer.buckets.in_process} in-process`,
  );
  return { response: answer.response, source: 'lake' as const, engine: answer.engine };
}

const daysRead = (read: ReadWindow | null) => `${read?.days ?? 0} days`;

async function fromRollups(
  projectId: number,
  query: TrendsModel,
  read: ReadWindow | null,
  settings: ProjectSettings,
  now: Date,
  firstAt: Date | undefined,
  phases: Phases,
  check: () => void,
) {
  const hourly = read
    ? await Promise.all(
        query.series.map((s) => {
          check();
          return readRollups(
            projectId,
            s.kind === 'EventsNode' ? s.event : String(s.id),
            hourKey(read.from),
            hourKey(read.to),
          );
        }),
      )
    : query.series.map(() => new Map<string, number>());
  phases.mark('read', daysRead(read));
  check();
  const response = computeTrendFromHourly(query, { hourly, project: settings, now, firstEventAt: firstAt });
  phases.mark('compute');
  return response;
}

async function fromEvents(
  projectId: number,
  inputs: TrendInputs,
  phases: Phases,
  check: () => void,
  readCounters?: DayCounterReader,
) {
  const { query, settings, actions, now, firstAt } = inputs;
  const { source, groups, cohorts, stored } = await readEvents(projectId, inputs, phases, check, readCounters);
  const response = computeTrendFromColumns(query, {
    source,
    project: settings,
    actions,
    now,
    firstEventAt: firstAt,
    groups,
    cohorts,
  });
  phases.mark('compute');
  return { response, source: stored };
}

/**
 * The events of the range as the engine reads them, persons joined when they matter, the groups it
 * reads and the members of the cohorts it names loaded.
 */
async function readEvents(
  projectId: number,
  inputs: TrendInputs,
  phases: Phases,
  check: () => void,
  readCounters?: DayCounterReader,
) {
  const { query, range, read, settings, actions, now } = inputs;
  const persons = needsPersons(query, settings, actions);
  const projection = { properties: eventPropertiesUsed(query, settings, actions), distinctIds: persons };
  const { columns, source, segments } =
    read && range.buckets.length
      ? await readTrendRows(
          projectId,
          read.from,
          read.to,
          needsEventNames(query, actions),
          projection,
          now,
          check,
          readCounters,
        )
      : {
          columns: { segments: [], rows: [], from: 0, to: -1, projection },
          source: 'events' as const,
          segments: { read: 0, kept: 0 },
        };
  // The desc names the days read, and how many of their segments this container had in memory.
  phases.mark(
    'read',
    `${daysRead(read && range.buckets.length ? read : null)}; ${segments.kept} of ${segments.read} segments in memory`,
  );
  const [join, groups, cohorts] = await Promise.all([
    persons ? personJoin(projectId, distinctIdsOf(columns)) : distinctIdsOnly,
    groupLookup(projectId, query, groupTypesRead(query, settings, actions), columns),
    loadCohortMembers(projectId, inputs.cohorts),
  ]);
  phases.mark('persons');
  check();
  return { source: checkedSource(storedSource(columns, join), check), groups, cohorts, stored: source };
}

/**
 * What the engine reads to answer `query` on a project the caller has read (events, persons, groups,
 * settings, actions): for readers of a trend's rows other than its answer (the actors behind a number).
 */
export async function trendEngineInput(project: ProjectRecord, query: TrendsModel, check: () => void = () => {}) {
  const inputs = await prepareTrend(async () => project, project.id, query);
  const { settings, actions, firstAt, now } = inputs;
  const { source, groups, cohorts } = await readEvents(project.id, inputs, new Phases(), check);
  return { source, project: settings, actions, now, firstEventAt: firstAt, groups, cohorts };
}

/** The source with `check` called before each batch (a segment chunk or a day of rows) the engine computes. */
function checkedSource(source: ColumnSource, check: () => void): ColumnSource {
  return {
    from: source.from,
    to: source.to,
    forEachBatch: (visit) =>
      source.forEachBatch((batch) => {
        check();
        visit(batch);
      }),
  };
}

/** Each distinct id's person (merged distinct ids share one) and that person's current properties; an unknown one stands for itself. */
async function personJoin(projectId: number, distinctIds: Set<string>): Promise<PersonJoin> {
  const ids = await personIdsOf([...distinctIds].map((distinctId) => ({ projectId, distinctId })));
  const persons = new Map((await getPersons(projectId, [...ids.values()])).map((p) => [p.id, p]));
  return (distinctId) => {
    const personId = ids.get(`${projectId}#${distinctId}`);
    const person = personId === undefined ? undefined : persons.get(personId);
    return person ? { person: String(person.id), properties: person.properties } : distinctIdsOnly(distinctId);
  };
}
