/**
 * Numeric and on/off settings with their allowed range, for the modules that
 * declare them. Values are plain decimals only: `1e20`, `0x10` or
 * `99999999999999999999` would be read by `Number` as something the user
 * probably did not mean, so they are refused with the key and the range.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import type * as Option from "effect/Option"

export interface Range {
  readonly min: number
  readonly max: number
}

/** What was given, short enough for one error line. */
const shown = (raw: string): string => JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw)

// The return types are spelled out: inferred, they upset tsc's checking of unrelated modules.
const inRange = (expected: string, pattern: RegExp, range: Range) =>
(raw: string): Either.Either<number, ConfigError.ConfigError> => {
  const text = raw.trim()
  const value = pattern.test(text) ? Number(text) : Number.NaN
  return value >= range.min && value <= range.max
    ? Either.right(value)
    : Either.left(ConfigError.InvalidData([], `expected ${expected} from ${range.min} to ${range.max}, got ${shown(raw)}`))
}

/** A whole number within `range`; `fallback` when unset. */
export const integerIn = (name: string, range: Range, fallback: number): Config.Config<number> =>
  Config.string(name).pipe(
    Config.mapOrFail(inRange("an integer", /^-?\d{1,16}$/, range)),
    Config.withDefault(fallback)
  )

/** A whole number within `range`, or None when unset: for a default the owner works out (it says how). */
export const optionalIntegerIn = (name: string, range: Range): Config.Config<Option.Option<number>> =>
  Config.option(Config.string(name).pipe(Config.mapOrFail(inRange("an integer", /^-?\d{1,16}$/, range))))

/** A number of seconds within `range`, fractions allowed (`2.5`); `fallback` when unset. */
export const secondsIn = (name: string, range: Range, fallback: number): Config.Config<number> =>
  Config.string(name).pipe(
    Config.mapOrFail(inRange("a number of seconds", /^-?\d{1,16}(\.\d{1,9})?$/, range)),
    Config.withDefault(fallback)
  )

/** `1`, `0`, `true` or `false` in any case; `false` when empty, `fallback` (false unless given) when unset. */
export const onOff = (name: string, fallback = false): Config.Config<boolean> =>
  Config.string(name).pipe(
    Config.mapOrFail((raw): Either.Either<boolean, ConfigError.ConfigError> => {
      const value = raw.trim().toLowerCase()
      if (["", "0", "false"].includes(value)) return Either.right(false)
      if (["1", "true"].includes(value)) return Either.right(true)
      return Either.left(ConfigError.InvalidData([], `expected 1, 0, true or false, got ${shown(raw)}`))
    }),
    Config.withDefault(fallback)
  )
