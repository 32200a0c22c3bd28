import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, importsOf, ROOT, tsFiles } from '../support/import-graph.ts';

/**
 * The layer table of docs/architecture.md ("Layout: by layer") as data: which files each layer holds
 * and what they may import. A file belongs to the layer of its most specific path (a file listed by
 * name wins over its folder). Change the table and this together.
 */
type Layer = 'inbound' | 'shapes' | 'rules' | 'adapters' | 'pure' | 'process' | 'tooling';

interface LayerRule {
  paths: string[];
  /** Layers whose files it may import (its own included when listed). */
  mayImport: Layer[];
  /** Packages it never imports (the SDKs, I/O, Lambda types), or the only ones it may. */
  packages?: { never: RegExp } | { only: RegExp };
  /** Files of an allowed layer it still never imports. */
  neverFiles?: string[];
  /** Files of another layer it may import all the same. */
  alsoFiles?: string[];
}

const SERVICE: Layer[] = ['inbound', 'shapes', 'rules', 'adapters', 'pure', 'process'];

/** What a pure library may not touch: files, sockets, processes, AWS, Lambda. */
const IO =
  /^(node:(fs|fs\/promises|http|https|http2|child_process|dgram|dns|tls|worker_threads)|@aws-sdk\/.*|@smithy\/.*|aws-lambda|@middy\/.*|@aws-lambda-powertools\/.*)$/;

const LAYERS: Record<Layer, LayerRule> = {
  inbound: {
    paths: ['functions/', 'shared/http/', 'shared/workers/'],
    mayImport: SERVICE,
  },
  shapes: {
    paths: ['shared/schemas/'],
    mayImport: ['shapes', 'pure'],
    packages: { only: /^valibot$/ },
  },
  rules: {
    paths: ['shared/domain/'],
    mayImport: ['rules', 'shapes', 'adapters', 'pure', 'process'],
    packages: { never: /^(@aws-sdk\/.*|@smithy\/.*|aws-lambda|@middy\/.*)$/ },
    neverFiles: ['shared/db/keys.ts'],
  },
  adapters: {
    paths: [
      'shared/aws/',
      'shared/db/',
      'shared/queues/',
      'shared/exports/',
      'shared/lake/store.ts',
      'shared/lake/engine.ts',
    ],
    mayImport: ['adapters', 'pure', 'process'],
  },
  pure: {
    paths: [
      'shared/trends/',
      'shared/regex.ts',
      'shared/preload.ts',
      'shared/hogql/',
      'shared/segments/',
      'shared/lake/',
      'shared/capture/',
      'shared/auth/',
      'shared/exports/files.ts',
      'shared/exports/hogql.ts',
      'shared/exports/intervals.ts',
      'shared/exports/destination-rules.ts',
      'shared/retry.ts',
      'shared/csv.ts',
      'shared/json.ts',
      'shared/errors.ts',
      'shared/ids.ts',
    ],
    mayImport: ['pure'],
    // The one "now" (uuidv7 reads it): not pure, but fixed by configuration in tests, so it is read, not passed.
    alsoFiles: ['shared/clock.ts'],
    packages: { never: IO },
  },
  process: {
    paths: [
      'shared/config.ts',
      'shared/queue-settings.ts',
      'shared/clock.ts',
      'shared/observability.ts',
      'shared/metric-names.ts',
      'shared/invocation.ts',
    ],
    mayImport: ['process'],
    packages: { never: /^(@aws-sdk\/.*|@smithy\/.*)$/ },
  },
  tooling: {
    paths: ['infra/'],
    mayImport: [...SERVICE, 'tooling'],
  },
};

/**
 * Imports the table forbids that live in files another branch of issue 22 (typed-model) is
 * rewriting; the lead removes each entry when that branch lands. An entry no longer needed fails
 * the test, so none outlives its reason.
 */
const ALLOWED_LAYER_BREACHES = new Set<string>([]);

/** Import cycles allowed, each named by the edge that closes it (left out of the graph): none. */
const ALLOWED_CYCLE_EDGES = new Set<string>([]);

const ROOTS = ['shared', 'functions', 'infra'];
const FILES = ROOTS.flatMap(tsFiles);

function layerOf(file: string): Layer | undefined {
  let best: { layer: Layer; length: number } | undefined;
  for (const [layer, rule] of Object.entries(LAYERS) as [Layer, LayerRule][]) {
    for (const path of rule.paths) {
      const matches = path.endsWith('/') ? file.startsWith(path) : file === path;
      if (matches && path.length > (best?.length ?? -1)) best = { layer, length: path.length };
    }
  }
  return best?.layer;
}

/** Every import of `file` the table forbids, as `file -> target (why)`. */
function breaches(file: string): string[] {
  const layer = layerOf(file);
  if (!layer) return [];
  const rule = LAYERS[layer];
  return importsOf(file).flatMap(({ target, external }) => {
    if (external) {
      const pkg = rule.packages;
      const refused = pkg && ('only' in pkg ? !pkg.only.test(target) : pkg.never.test(target));
      return refused ? [`${file} -> ${target} (package: ${layer} never imports it)`] : [];
    }
    if (!ROOTS.some((root) => target.startsWith(`${root}/`))) return [];
    const targetLayer = layerOf(target);
    if (!targetLayer) return [];
    if (!rule.mayImport.includes(targetLayer) && !rule.alsoFiles?.includes(target))
      return [`${file} -> ${target} (${layer} imports ${targetLayer})`];
    if (rule.neverFiles?.includes(target)) return [`${file} -> ${target} (${layer} never imports it)`];
    return [];
  });
}

const edge = (line: string) => line.replace(/ \(.*\)$/, '');

describe('layers (docs/architecture.md, "Layout: by layer")', () => {
  it('places every file of shared/, functions/ and infra/ in a layer of the table', () => {
    expect(FILES.filter((file) => !layerOf(file))).toEqual([]);
    expect(FILES.length).toBeGreaterThan(200);
  });

  it('has every import point the way the table allows', () => {
    const found = FILES.flatMap(breaches);
    expect(found.filter((line) => !ALLOWED_LAYER_BREACHES.has(edge(line)))).toEqual([]);
    const stale = [...ALLOWED_LAYER_BREACHES].filter((allowed) => !found.some((line) => edge(line) === allowed));
    expect(stale, 'allow-list entries no longer needed: remove them').toEqual([]);
  });

  it('keeps build tooling out of the runtime: nothing under shared/ or functions/ imports infra/', () => {
    const runtime = FILES.filter((file) => !file.startsWith('infra/'));
    const intoInfra = runtime.flatMap((file) =>
      importsOf(file).flatMap(({ target }) => (target.startsWith('infra/') ? [`${file} -> ${target}`] : [])),
    );
    expect(intoInfra).toEqual([]);
    expect(layerOf('infra/openapi/document.ts')).toBe('tooling');
  });

  it('bundles no build tool into a Lambda: shared/ and functions/ import no devDependency (the OpenAPI generator lives in infra/)', () => {
    const { dependencies, devDependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const packageOf = (spec: string) =>
      spec
        .split('/')
        .slice(0, spec.startsWith('@') ? 2 : 1)
        .join('/');
    const buildOnly = (spec: string) => packageOf(spec) in devDependencies && !(packageOf(spec) in dependencies);
    const runtime = FILES.filter((file) => !file.startsWith('infra/'));
    const found = runtime.flatMap((file) =>
      importsOf(file).flatMap(({ target, external }) =>
        external && buildOnly(target) ? [`${file} -> ${target}`] : [],
      ),
    );
    expect(found).toEqual([]);
    expect(buildOnly('@valibot/to-json-schema')).toBe(true);
  });

  it('classifies by the most specific path and refuses what the table refuses (the checker itself)', () => {
    expect(layerOf('shared/exports/intervals.ts')).toBe('pure');
    expect(layerOf('shared/exports/s3.ts')).toBe('adapters');
    expect(layerOf('shared/hogql/ast.ts')).toBe('pure');
    expect(layerOf('shared/clock.ts')).toBe('process');
    expect(layerOf('bench/run.ts')).toBeUndefined();
    expect(LAYERS.shapes.mayImport).not.toContain('inbound');
    expect(LAYERS.adapters.mayImport).not.toContain('rules');
    expect(LAYERS.pure.mayImport).toEqual(['pure']);
  });
});

describe('import cycles among shared/, functions/ and infra/', () => {
  it('has none (a depth-first search over the static imports)', () => {
    const graph = importGraph(FILES);
    const used = new Set<string>();
    for (const [file, targets] of graph) {
      graph.set(
        file,
        targets.filter((target) => {
          const allowed = ALLOWED_CYCLE_EDGES.has(`${file} -> ${target}`);
          if (allowed) used.add(`${file} -> ${target}`);
          return !allowed;
        }),
      );
    }
    expect(importCycles(graph).map((cycle) => cycle.join(' -> '))).toEqual([]);
    expect(
      [...ALLOWED_CYCLE_EDGES].filter((e) => !used.has(e)),
      'allow-list entries no longer needed: remove them',
    ).toEqual([]);
  });

  it('finds a cycle when there is one (the search itself)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    expect(importCycles(graph)).toEqual([
      ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ['e.ts', 'e.ts'],
    ]);
    expect(
      importCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toEqual([]);
  });
});
