/**
 * bin/code-cache.cjs loads a bundle's modules with stack traces formatted
 * by function name only (Node's formatting of the first trace, which
 * effect's Utils makes as it loads, cost a start milliseconds; see there)
 * and keeps Node's formatter under this key; an entry puts it back first
 * thing, so every command runs with the usual stack traces. Loaded any
 * other way (tests, the unbundled modules), there is nothing to put back.
 */
const key = Symbol.for("planckclaw/prepareStackTrace")

type Formatter = ErrorConstructor["prepareStackTrace"]

export const restore = (): void => {
  const kept = globalThis as { [key]?: Formatter }
  if (!Object.hasOwn(kept, key)) return
  const saved = kept[key]
  delete kept[key]
  if (saved === undefined) Reflect.deleteProperty(Error, "prepareStackTrace")
  else Error.prepareStackTrace = saved
}
