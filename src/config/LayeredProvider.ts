/**
 * Settings from maps in order of precedence (flags, environment, config.env,
 * home defaults): the same answers and the same errors as chaining
 * `ConfigProvider.fromMap` providers with `ConfigProvider.orElse`, made
 * cheap. The chain asks every map in turn through the effect runtime and
 * builds a "missing" error at each level for every unset key; the start-up
 * check reads nearly every key, so that cost tens of milliseconds of every
 * start. Here a map without the key is skipped by a plain lookup, and the
 * error tree is only built when no map gives a value.
 *
 * Kept from the chain on purpose: a value that does not parse in one map
 * (e.g. HISTORY_MAX=lots in the environment) falls through to the next map,
 * and when none gives a value the error is the same `Or` tree (invalid
 * values named, missing ones reported as not set).
 */
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as PathPatch from "effect/ConfigProviderPathPatch"

// How ConfigProvider.fromMap (path delimiter ".") stores a key: `NAME[3]` segments become `NAME.[3]`.
const indexed = /(^.+)(\[(\d+)\])$/
const storedKey = (key: string): string =>
  key.split(".").flatMap((segment) => {
    const match = segment.match(indexed)
    const index = match === null ? Number.NaN : Number.parseInt(match[3]!, 10)
    return match === null || Number.isNaN(index) ? [segment] : [match[1]!, `[${index}]`]
  }).join(".")

const missing = (path: ReadonlyArray<string>, key: string): ConfigError.ConfigError =>
  ConfigError.MissingData([...path], `Expected ${key} to exist in the provided map`)

/** `maps[0]` wins over `maps[1]`, and so on. */
export const layered = (maps: ReadonlyArray<ReadonlyMap<string, string>>): ConfigProvider.ConfigProvider => {
  const providers = maps.map((map) => ConfigProvider.fromMap(map as Map<string, string>))
  const keys = maps.map((map) => new Set([...map.keys()].map(storedKey)))
  // Listing children (maps and tables of settings, which nothing at start-up reads) goes through the plain chain.
  const chained = providers.reduce((first, next) => ConfigProvider.orElse(first, () => next))
  const load = <A>(
    path: ReadonlyArray<string>,
    primitive: Parameters<ConfigProvider.ConfigProvider.Flat["load"]>[1] & { readonly _A?: A },
    split: boolean
  ) => {
    const key = path.join(".")
    // The error of each map asked so far, in order, as orElse would combine them.
    const failures: Array<ConfigError.ConfigError | undefined> = []
    const from = (index: number): Effect.Effect<Array<A>, ConfigError.ConfigError> => {
      for (let i = index; i < maps.length; i++) {
        if (!keys[i]!.has(key)) {
          failures.push(undefined)
          continue
        }
        return providers[i]!.flattened.load(path, primitive as never, split).pipe(
          Effect.catchAll((error) => {
            failures.push(error)
            return from(i + 1)
          })
        ) as Effect.Effect<Array<A>, ConfigError.ConfigError>
      }
      const errors = failures.map((error) => error ?? missing(path, key))
      return Effect.fail(errors.slice(1).reduce((left, right) => ConfigError.Or(left, right), errors[0]!))
    }
    return from(0)
  }
  return ConfigProvider.fromFlat(ConfigProvider.makeFlat({
    load: load as ConfigProvider.ConfigProvider.Flat["load"],
    enumerateChildren: (path) => chained.flattened.enumerateChildren(path),
    patch: PathPatch.empty
  }))
}
