/**
 * bin/code-cache.cjs loads a bundle's modules with no stack trace limit
 * (formatting a trace at load makes V8 parse the whole bundle again, see
 * there) and keeps the limit under this key; an entry puts it back first
 * thing, so every command runs with the usual stack traces. Loaded any
 * other way (tests, the unbundled modules), there is nothing to put back.
 */
const key = Symbol.for("planckclaw/stackTraceLimit")

export const restore = (): void => {
  const kept = globalThis as { [key]?: number }
  const saved = kept[key]
  if (saved === undefined) return
  delete kept[key]
  Error.stackTraceLimit = saved
}
