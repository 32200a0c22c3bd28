import { now } from '../clock.ts';
import type { PersonRecord } from '../db/persons.ts';
import { compileGroup, isGroup, parseProperties, refuseDeepNesting } from '../trends/properties.ts';
import { type CohortSets, cohortRefsOf } from '../trends/cohort-filters.ts';
import { checkCohortRefs, loadCohortMembers } from './trend-cohorts.ts';
import type { PropertyFilter, PropertyGroup } from '../trends/types.ts';

/**
 * A person filter as the persons list's `properties` and ActorsQuery's `properties` take it, read with
 * the trend engine's filter grammar and operators (one implementation). Persons only have person
 * properties and cohorts, so, like PostHog, only person and cohort filters apply; a filter without a
 * type is taken as a person filter. Referenced cohorts must exist; their members are loaded once.
 */
export async function personFilter(
  projectId: number,
  raw: string | undefined,
): Promise<((properties: Record<string, unknown>, personId?: number) => boolean) | undefined> {
  if (raw === undefined || raw === '') return undefined;
  const group = parsePersonFilter(raw, { cohorts: true });
  const cohorts = await loadCohortMembers(projectId, await checkCohortRefs(projectId, cohortRefsOf(group)));
  return compilePersonFilter(group, cohorts);
}

/** The filter parsed (a filter without a type is a person filter); `cohorts`: cohort filters are read too (ActorsQuery). */
export function parsePersonFilter(raw: string, options: { cohorts?: boolean } = {}): PropertyGroup {
  const asPerson = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(asPerson);
    if (value && typeof value === 'object') {
      const o = value as Record<string, unknown>;
      if (Array.isArray(o.values)) return { ...o, values: o.values.map(asPerson) };
      return { ...o, type: o.type ?? 'person' };
    }
    return value;
  };
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // parseProperties reports it in the API's shape
  }
  refuseDeepNesting(parsed, 'properties'); // before asPerson's recursion
  return parseProperties(asPerson(parsed), 'properties', options).group;
}

/** A parsed person filter over a person's properties; cohort filters test its id against `cohorts`' members. */
export function compilePersonFilter(
  group: PropertyGroup,
  cohorts?: CohortSets,
): (properties: Record<string, unknown>, personId?: number) => boolean {
  const predicate = compileGroup(personOnly(group), { tz: 'UTC', now: now().getTime(), weekStartDay: 0 }, { cohorts });
  return (properties, personId) =>
    predicate({
      uuid: '',
      event: '',
      distinct_id: '',
      person_id: personId === undefined ? '' : String(personId),
      timestamp: '',
      properties: {},
      person_properties: properties,
    });
}

function personOnly(group: PropertyGroup): PropertyGroup {
  const values = group.values.flatMap((v): (PropertyFilter | PropertyGroup)[] =>
    isGroup(v) ? [personOnly(v)] : v.type === 'person' || v.type === 'cohort' ? [v] : [],
  );
  return { type: group.type, values };
}

/**
 * PostHog's ActorsQuery `search` over persons: a case-insensitive substring of the `email` or `name`
 * property, of the person's id or uuid, or of one of its distinct ids (the persons list's search,
 * which matches distinct ids only exactly, finds a subset of these).
 */
export function personSearch(search: string): (person: PersonRecord) => boolean {
  const needle = search.toLowerCase();
  // Objects as JSON: String() of `{"toString": {}}` (a JSON property) would throw.
  const has = (value: unknown) =>
    value !== undefined &&
    value !== null &&
    (typeof value === 'object' ? JSON.stringify(value) : String(value)).toLowerCase().includes(needle);
  return (p) =>
    has(p.properties.email) ||
    has(p.properties.name) ||
    has(p.id) ||
    has(p.uuid) ||
    p.distinct_ids.some((d) => d.toLowerCase().includes(needle));
}
