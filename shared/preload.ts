/**
 * Libraries a function may need but should not pay for at module init (re2js: ~60 ms to load on this
 * project's machine). A module that uses one registers its loader here when it is itself loaded; the
 * HTTP and worker pipelines await every registered loader before the handler runs, so code deep in a
 * synchronous call (a filter's regex, compiled while validating) finds the library ready. A function
 * whose code never registers one (projects_retrieve) neither carries the library nor waits for it.
 */
const loaders = new Set<() => Promise<void>>();

/**
 * `use`, with `load` registered to run before handlers. Call it with the `@__PURE__` annotation in a
 * module's top-level `const`: a bundle whose code never reaches `use` drops the call, the
 * registration and the library with it (a bare top-level call would keep all three in every bundle
 * that imports the module for anything).
 */
export function loadedBeforeHandling<F>(load: () => Promise<void>, use: F): F {
  loaders.add(load);
  return use;
}

/** Runs the loaders not yet done; a loader that failed stays registered, so the next invocation tries again. */
export async function preloadLibraries(): Promise<void> {
  if (!loaders.size) return;
  await Promise.all(
    [...loaders].map(async (load) => {
      await load();
      loaders.delete(load);
    }),
  );
}
