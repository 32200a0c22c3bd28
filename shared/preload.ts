/**
 * Libraries a function may need but should not pay for at module init (re2js: ~60 ms to load on this
 * project's machine). A module that uses one registers its loader here when it is itself loaded; the
 * HTTP and worker pipelines await every registered loader before the handler runs, so code deep in a
 * synchronous call (a filter's regex, compiled while validating) finds the library ready. A function
 * whose code never registers one (projects_retrieve) neither carries the library nor waits for it.
 */
const loaders = new Set<() => Promise<void>>();

export function loadBeforeHandling(load: () => Promise<void>): void {
  loaders.add(load);
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
