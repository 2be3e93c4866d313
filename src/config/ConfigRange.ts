/**
 * Each setting's Config, built from its declaration (src/config/settings/):
 * the range checked and the default used are the ones `help config` shows.
 * Numbers are plain decimals only: `1e20`, `0x10` or `99999999999999999999`
 * would be read by `Number` as something the user probably did not mean, so
 * they are refused with the key and the range.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type { ChoiceSetting, NumberSetting, SwitchSetting, TextSetting } from "./Setting.js"

export interface Range {
  readonly min: number
  readonly max: number
}

/** A setting refused with `message` (which never shows a secret's value), at the key `name`. */
export const invalidSetting = (name: string, message: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.InvalidValue({ message }))))

/** Settings refused together (`message` names them): a check across keys. */
export const invalidSettings = (message: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message })))

/** `config`, refused with `message` when `valid` says no. */
export const validated = <A>(config: Config.Config<A>, message: string, valid: (value: A) => boolean): Config.Config<A> =>
  Config.mapEffect(config, (value) => valid(value) ? Effect.succeed(value) : Effect.fail(invalidSettings(message)))

/** A setting that must be set and is not (or is empty where that means unset). */
export const missingSetting = (name: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.MissingKey(undefined))))

/** `name`'s text, checked by `check` (a value, or the reason it is refused). */
export const checkedString = <A>(name: string, check: (raw: string) => { readonly value: A } | string): Config.Config<A> =>
  Config.String(name).pipe(Config.mapEffect((raw) => {
    const checked = check(raw)
    return typeof checked === "string" ? Effect.fail(invalidSetting(name, checked)) : Effect.succeed(checked.value)
  }))

/** What was given, short enough for one error line. */
const shown = (raw: string): string => JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw)

const inRange = (expected: string, pattern: RegExp, range: Range) => (raw: string): { readonly value: number } | string => {
  const text = raw.trim()
  const value = pattern.test(text) ? Number(text) : Number.NaN
  return value >= range.min && value <= range.max
    ? { value }
    : `expected ${expected} from ${range.min} to ${range.max}, got ${shown(raw)}`
}

/** A whole number within `range`; `fallback` when unset. */
const integerIn = (name: string, range: Range, fallback: number): Config.Config<number> =>
  checkedString(name, inRange("an integer", /^-?\d{1,16}$/, range)).pipe(Config.withDefault(fallback))

/** A whole number within `range`, or None when unset: for a default the owner works out (it says how). */
const optionalIntegerIn = (name: string, range: Range): Config.Config<Option.Option<number>> =>
  Config.option(checkedString(name, inRange("an integer", /^-?\d{1,16}$/, range)))

/** A number of seconds within `range`, fractions allowed (`2.5`); `fallback` when unset. */
const secondsIn = (name: string, range: Range, fallback: number): Config.Config<number> =>
  checkedString(name, inRange("a number of seconds", /^-?\d{1,16}(\.\d{1,9})?$/, range)).pipe(Config.withDefault(fallback))

/** `1`, `0`, `true` or `false` in any case; `false` when empty, `fallback` (false unless given) when unset. */
const onOff = (name: string, fallback = false): Config.Config<boolean> =>
  checkedString(name, (raw) => {
    const value = raw.trim().toLowerCase()
    if (["", "0", "false"].includes(value)) return { value: false }
    if (["1", "true"].includes(value)) return { value: true }
    return `expected 1, 0, true or false, got ${shown(raw)}`
  }).pipe(Config.withDefault(fallback))

/** A number setting: its range, and its default when unset. */
export const numberOf = (setting: NumberSetting & { readonly default: number }): Config.Config<number> =>
  setting.kind === "integer" ? integerIn(setting.key, setting, setting.default) : secondsIn(setting.key, setting, setting.default)

/** A whole number setting whose default its owner works out: None when unset. */
export const optionalNumberOf = (setting: NumberSetting & { readonly kind: "integer" }): Config.Config<Option.Option<number>> =>
  optionalIntegerIn(setting.key, setting)

/** An on/off setting, its default when unset. */
export const switchOf = (setting: SwitchSetting): Config.Config<boolean> => onOff(setting.key, setting.default)

/** `channel, user, server or one` (also the command line's "expected a, b or c"). */
export const wordList = (words: ReadonlyArray<string>): string =>
  words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`

/**
 * One of a setting's words (the spaces around it ignored), its default when
 * unset. Not Config.Literals: its refusal is an issue with no message of
 * its own, which ConfigErrors would turn into an empty line.
 */
export const choiceOf = <const Choice extends string>(
  setting: ChoiceSetting & { readonly choices: ReadonlyArray<Choice>; readonly default: Choice }
): Config.Config<Choice> => {
  const choices: ReadonlyArray<Choice> = setting.choices
  return checkedString(setting.key, (raw): { readonly value: Choice } | string => {
    const word = choices.find((choice) => choice === raw.trim())
    return word === undefined ? `expected ${wordList(choices)}, got ${shown(raw)}` : { value: word }
  }).pipe(Config.withDefault(setting.default))
}

/**
 * A text setting, checked by `check` (a value, or the reason it is refused,
 * said after the key); when unset, its declared default goes through the same
 * check, so the value used is the one `help config` shows.
 */
export const textOf: {
  (setting: TextSetting & { readonly default: string }): Config.Config<string>
  <A>(setting: TextSetting & { readonly default: string }, check: (raw: string) => { readonly value: A } | string): Config.Config<A>
} = <A>(
  setting: TextSetting & { readonly default: string },
  check?: (raw: string) => { readonly value: A } | string
): Config.Config<A | string> => {
  const raw = Config.String(setting.key).pipe(Config.withDefault(setting.default))
  return check === undefined ? raw : raw.pipe(Config.mapEffect((text) => {
    const checked = check(text)
    return typeof checked === "string" ? Effect.fail(invalidSetting(setting.key, checked)) : Effect.succeed(checked.value)
  }))
}
