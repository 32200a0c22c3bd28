/**
 * Events per distinct id over a ColumnSource: what a behavioural cohort leaf (performed_event,
 * performed_event_multiple) needs, counted on the columns the trend engine reads (segment chunks
 * decoded one at a time, raw rows as in-memory batches), so memory is the source plus one count per
 * distinct id that matched.
 */
import type { DateContext } from '../dates.ts';
import { eventFilterKeys } from '../compute.ts';
import type { ActionDefinition } from '../types.ts';
import type { ColumnSource } from './batch.ts';
import { actionNode } from './engine.ts';
import { evaluate, type MaskNode } from './masks.ts';

/** What a leaf reads and which of those rows it counts. */
export interface CountedEvents {
  /** Event names storage reads (null: every name; empty: nothing can match). */
  names: string[] | null;
  /** Event properties the filter tests (the projection storage decodes). */
  properties: string[];
  node: MaskNode;
}

/** An event by name: every row storage hands over for that name. */
export function eventByName(name: string): CountedEvents {
  return { names: [name], properties: [], node: { kind: 'name', name } };
}

/** An action: any of its steps, as the trend engine matches an ActionsNode. */
export function eventsOfAction(action: ActionDefinition | undefined, ctx: DateContext): CountedEvents {
  const steps = action?.steps ?? [];
  if (!action || !steps.length) return { names: [], properties: [], node: { kind: 'const', value: false } };
  const names = steps.some((s) => s.event === null || s.event === undefined)
    ? null
    : [...new Set(steps.map((s) => s.event as string))];
  const properties = [...new Set(steps.flatMap((s) => eventFilterKeys(s.properties)))].sort();
  return { names, properties, node: actionNode(action, ctx, `action_${action.id}`) };
}

export interface EventCounts {
  /** Matching events of the window per distinct id (only ids with at least one). */
  perDistinctId: Map<string, number>;
  /** Events of the window read (matching or not), up to the batch that went over `maxEvents`. */
  events: number;
  /** The window held more than `maxEvents`: the counts are incomplete and must not be used. */
  over: boolean;
}

/**
 * Counts each distinct id's rows of `source` in [from, to] that `node` lets through. Per batch, counts
 * go to an array by actor (a chunk's distinct-id dictionary) and then once per distinct id to the
 * map, so the map is touched once per (batch, distinct id) rather than per event. Stops counting
 * once more than `maxEvents` window events were seen.
 */
export function countPerDistinctId(source: ColumnSource, node: MaskNode, maxEvents: number): EventCounts {
  const perDistinctId = new Map<string, number>();
  let events = 0;
  let over = false;
  const { from, to } = source;
  source.forEachBatch((batch) => {
    if (over) return;
    const mask = evaluate(node, batch);
    const { n, base, time, actorIndexes } = batch;
    const perActor = new Uint32Array(batch.actors.length);
    for (let i = 0; i < n; i += 1) {
      const t = base + time[i]!;
      if (t < from || t > to) continue;
      events += 1;
      if (mask === false || (mask !== true && mask[i] === 0)) continue;
      perActor[actorIndexes ? actorIndexes[i]! : 0]! += 1;
    }
    if (events > maxEvents) {
      over = true;
      return;
    }
    const ids = batch.distinctIds ?? batch.actors.map((a) => a.person);
    for (let a = 0; a < perActor.length; a += 1) {
      const c = perActor[a]!;
      if (c === 0) continue;
      const id = ids[a]!;
      perDistinctId.set(id, (perDistinctId.get(id) ?? 0) + c);
    }
  });
  return { perDistinctId, events, over };
}
