/**
 * Settings from maps in order of precedence (flags, environment, config.env,
 * home defaults): the first map that has a key gives its value, and an
 * invalid value there is refused (naming the key) even when a later map has
 * a good one. An empty value is no value, as in the original's shell (and
 * as ConfigFile reads config.env and the environment): a default applies.
 */
import * as ConfigProvider from "effect/ConfigProvider"

/** `maps[0]` wins over `maps[1]`, and so on. */
export const layered = (maps: ReadonlyArray<ReadonlyMap<string, string>>): ConfigProvider.ConfigProvider => {
  const record: Record<string, string> = {}
  for (let i = maps.length - 1; i >= 0; i--) for (const [key, value] of maps[i]!) if (value !== "") record[key] = value
  return ConfigProvider.fromEnvRecord(record)
}

/** A provider of exactly these settings (tests, embedding). */
export const fromEntries = (entries: Iterable<readonly [string, string]>): ConfigProvider.ConfigProvider =>
  layered([new Map(entries)])
