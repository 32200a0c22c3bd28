import { preloadLibraries } from '../../preload.ts';
import type { Middleware } from './pipeline.ts';

/**
 * Awaits the libraries the function's code registered for lazy loading (shared/preload.ts) before
 * anything that may call them synchronously: validation compiles a filter's regex.
 */
export const preload: Middleware = {
  before: async () => {
    await preloadLibraries();
  },
};
