/** The code cache loader for ES modules: the implementation is CommonJS (see code-cache.cjs). */
export { cacheCommand, cacheDirectories, cacheName, forRunBundle, runBundle, wrapBundle } from "./code-cache.cjs"
