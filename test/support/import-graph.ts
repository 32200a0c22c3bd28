import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

/** The repository root: every path below is relative to it, with `/` separators. */
export const ROOT = join(import.meta.dirname, '..', '..');

/** The .ts files under `dir` (declaration files aside: they import nothing at run time). */
export function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * Static `import ... from '...'`, `import '...'` and `export ... from '...'` at the start of a line.
 * The clause between the keyword and `from` may only hold names, braces, commas, `*` and whitespace
 * (so a multi-line import matches and code that merely contains `from '` does not). Dynamic
 * `import()` is left out: it is how the local server and the OpenAPI CLI load handlers on purpose.
 */
const STATIC_IMPORT = /^(?:import|export)\s+(?:[\w*{}\s,$]*?\s*from\s*)?'([^']+)'/gm;

/** Package aliases of package.json `imports`. */
const ALIASES: [string, string][] = [
  ['#shared/', 'shared/'],
  ['#functions/', 'functions/'],
  ['#infra/', 'infra/'],
];

export interface Import {
  /** A repository path (`shared/retry.ts`), or the package name as written (`valibot`, `node:fs`). */
  target: string;
  /** True when `target` is a package, not a file of the repository. */
  external: boolean;
}

export function importsOf(file: string): Import[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(STATIC_IMPORT)].map(([, spec = '']) => {
    if (spec.startsWith('.'))
      return { target: normalize(join(dirname(file), spec)).replaceAll('\\', '/'), external: false };
    const alias = ALIASES.find(([from]) => spec.startsWith(from));
    if (alias) return { target: alias[1] + spec.slice(alias[0].length), external: false };
    return { target: spec, external: true };
  });
}

/** file -> the repository files it imports statically (of `files` only). */
export function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((file) => [file, importsOf(file).flatMap((i) => (!i.external && known.has(i.target) ? [i.target] : []))]),
  );
}

/**
 * The import cycles of `graph`: its strongly connected components of more than one file (or a file
 * importing itself), each given as one cycle through the component, found by depth-first search
 * (Tarjan's algorithm), listed from the file that sorts first.
 */
export function importCycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const to of graph.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(to) ?? 0));
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file) ?? 0, index.get(to) ?? 0));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.includes(file)) components.push(component);
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return components.map((component) => cycleThrough(graph, new Set(component)));
}

/** One cycle inside a strongly connected component: breadth-first from its first file back to itself. */
function cycleThrough(graph: Map<string, string[]>, component: Set<string>): string[] {
  const start = [...component].sort()[0] ?? '';
  const parent = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const file = queue.shift() ?? '';
    for (const to of graph.get(file) ?? []) {
      if (!component.has(to)) continue;
      if (to === start) {
        const path = [file];
        for (let at = file; at !== start; ) {
          at = parent.get(at) ?? start;
          path.unshift(at);
        }
        return [...path, start];
      }
      if (!parent.has(to)) {
        parent.set(to, file);
        queue.push(to);
      }
    }
  }
  return [start];
}
