import type { FetchedSegment } from '../segments/codec.ts';
import type { Tally } from '../segments/fingerprint.ts';

/**
 * Segment builds kept in the warm container between invocations, so a trend over compacted days
 * transfers only each day's counter and build id, not its columns again.
 *
 * Why it is safe: a build (`through~random`) is immutable. Its chunks are written once and only ever
 * superseded by another build id, and a reader takes the kept columns only when the day counter it
 * has just read names that build as the newest (shared/db/segments.ts). So a rebuilt day (new events,
 * a person's events deleted) is not answered from memory; the tally check that follows is the usual one.
 *
 * Bounded by the bytes of the compressed columns held (ANALYTICS_SEGMENT_CACHE_MB), least recently
 * used out first; a build larger than a quarter of that is not kept, so one query cannot flush the
 * rest. Keys carry the project, so a build is only ever seen by queries of its own project.
 */
export interface CachedBuild {
  event: string;
  build: string;
  through: string;
  tally: Tally;
  /** Chunks in order; `columns` holds the property columns fetched so far (undefined: the chunk lacks it). */
  chunks: FetchedSegment[];
  /** Which attributes the chunks hold: `t`, `d` and the property columns' attribute names. */
  attributes: ReadonlySet<string>;
}

const ENTRY_OVERHEAD_BYTES = 256;

const entryKey = (projectId: number, day: string, event: string) => `${projectId}\u0000${day}\u0000${event}`;

function sizeOf(build: CachedBuild): number {
  let bytes = ENTRY_OVERHEAD_BYTES;
  for (const chunk of build.chunks) {
    bytes += (chunk.time?.byteLength ?? 0) + (chunk.dids?.byteLength ?? 0);
    for (const blob of chunk.columns.values()) bytes += blob?.byteLength ?? 0;
  }
  return bytes;
}

/** A copy that owns its bytes: a blob the SDK handed over may be a view of a larger response buffer. */
function own(blob: Uint8Array | undefined): Uint8Array | undefined {
  return blob && (blob.byteOffset !== 0 || blob.byteLength !== blob.buffer.byteLength) ? blob.slice() : blob;
}

export class SegmentCache {
  private readonly entries = new Map<string, { build: CachedBuild; bytes: number }>();
  private held = 0;

  constructor(private readonly capacityBytes: number) {}

  /** Bytes of columns held now. */
  get bytes(): number {
    return this.held;
  }

  /** The build kept for (project, day, event) if it holds every attribute asked for. */
  get(projectId: number, day: string, event: string, attributes: readonly string[]): CachedBuild | undefined {
    const key = entryKey(projectId, day, event);
    const entry = this.entries.get(key);
    if (!entry || !attributes.every((a) => entry.build.attributes.has(a))) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.build;
  }

  /** Keeps a complete build read from the store; the columns of a kept copy of the same build are merged in. */
  put(projectId: number, day: string, build: CachedBuild): void {
    if (this.capacityBytes <= 0) return;
    const key = entryKey(projectId, day, build.event);
    const previous = this.entries.get(key);
    const merged = previous?.build.build === build.build ? mergeColumns(previous.build, build) : ownedCopy(build);
    const bytes = sizeOf(merged);
    this.drop(key);
    if (bytes > this.capacityBytes / 4) return;
    this.entries.set(key, { build: merged, bytes });
    this.held += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.held <= this.capacityBytes) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.held -= entry.bytes;
  }
}

function ownedCopy(build: CachedBuild): CachedBuild {
  return {
    ...build,
    chunks: build.chunks.map((c) => ({
      ...c,
      time: own(c.time)!,
      dids: own(c.dids)!,
      columns: new Map([...c.columns].map(([k, blob]) => [k, own(blob)])),
    })),
  };
}

function mergeColumns(kept: CachedBuild, fresh: CachedBuild): CachedBuild {
  const copy = ownedCopy(fresh);
  return {
    ...copy,
    attributes: new Set([...kept.attributes, ...fresh.attributes]),
    chunks: copy.chunks.map((c, i) => {
      const old = kept.chunks[i]!;
      return {
        ...c,
        time: c.time ?? old.time,
        dids: c.dids ?? old.dids,
        columns: new Map([...old.columns, ...c.columns]),
      };
    }),
  };
}
