/**
 * Where the lake keeps a (project, UTC day): its Parquet files under
 * `events/project_id=<p>/day=<YYYY-MM-DD>/<generation>-<n>.parquet`, and one small pointer object,
 * `manifests/events/project_id=<p>/day=<YYYY-MM-DD>/manifest`, listing the current generation's files
 * one URI a line. A rebuilt day is written under a new generation and becomes visible only when its
 * pointer is replaced (one PutObject: atomic), so a reader never sees half a day. The pointer is
 * Hive's symlink manifest: Athena's table reads the files it names (SymlinkTextInputFormat), and the
 * local readers (DuckDB) read the same lines.
 */

/** Partition and generation names are checked here, so that no key can leave its project's prefix. */
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const GENERATION = /^[0-9a-z-]{1,64}$/;

function checkedProject(projectId: number): void {
  if (!Number.isSafeInteger(projectId) || projectId < 0) throw new Error(`lake: bad project id ${projectId}`);
}

function checked(projectId: number, day: string): void {
  checkedProject(projectId);
  if (!DAY.test(day)) throw new Error(`lake: bad day ${day}`);
}

export const EVENTS_PREFIX = 'events/';
export const MANIFESTS_PREFIX = 'manifests/events/';

/** Everything of one project: its day files and its day pointers (what a project's query may read, and nothing else). */
export function projectPrefixes(projectId: number): { events: string; manifests: string } {
  checkedProject(projectId);
  return {
    events: `${EVENTS_PREFIX}project_id=${projectId}/`,
    manifests: `${MANIFESTS_PREFIX}project_id=${projectId}/`,
  };
}

export function dayPrefix(projectId: number, day: string): string {
  checked(projectId, day);
  return `${projectPrefixes(projectId).events}day=${day}/`;
}

export function dataKey(projectId: number, day: string, generation: string, part: number): string {
  if (!GENERATION.test(generation)) throw new Error(`lake: bad generation ${generation}`);
  return `${dayPrefix(projectId, day)}${generation}-${String(part).padStart(4, '0')}.parquet`;
}

export function pointerKey(projectId: number, day: string): string {
  checked(projectId, day);
  return `${projectPrefixes(projectId).manifests}day=${day}/manifest`;
}

/** Sortable (time first) and unique: `<ms since epoch, base 36>-<random>`. */
export function newGeneration(now: Date, random: string): string {
  return `${now.getTime().toString(36).padStart(9, '0')}-${random
    .toLowerCase()
    .replace(/[^0-9a-z]/g, '')
    .slice(0, 12)}`;
}

export const manifestText = (uris: string[]) => uris.map((u) => `${u}\n`).join('');

export const manifestUris = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
