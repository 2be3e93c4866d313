/**
 * An empty value counts as unset, as Effect 3's Config read it: an empty
 * `nonEmptyString`, or a blank secret (which Secrets.headerSecret refuses as
 * missing), gets the default or none. Effect 4's `Config.withDefault` and
 * `Config.option` apply only when no source has the key at all, and a flag
 * or a test's provider may hold an empty value.
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as SchemaIssue from "effect/SchemaIssue"
import { missingSetting } from "./ConfigRange.js"

/** Whether `issue` (found at `path`) says `key` is unset: missing, or empty where that means unset. */
const unsetAt = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>, key: string): boolean => {
  switch (issue._tag) {
    case "Pointer":
      return unsetAt(issue.issue, [...path, ...issue.path], key)
    case "Composite":
    case "AnyOf":
      return issue.issues.some((inner) => unsetAt(inner, path, key))
    case "MissingKey":
      return path.includes(key)
    case "InvalidType":
      // A key that no source gives reaches the schema as nothing at all.
      return issue.input === undefined && path.includes(key)
    default:
      return false
  }
}

/** Whether `error` says `key` is unset (missing, or empty where that means unset), not set to something wrong. */
export const isUnset = (error: Config.ConfigError, key: string): boolean =>
  error.cause._tag === "SchemaError" && unsetAt(error.cause.issue, [], key)

/** The text of `name`; empty is unset (Effect 3's `Config.nonEmptyString`). */
export const nonEmptyString = (name: string): Config.Config<string> =>
  Config.String(name).pipe(
    Config.mapEffect((value) => value === "" ? Effect.fail(missingSetting(name)) : Effect.succeed(value))
  )

/** `config`, or `fallback` when `key` is unset (missing, or empty where that means unset). */
export const withDefaultWhenUnset = <A, B>(config: Config.Config<A>, key: string, fallback: B): Config.Config<A | B> =>
  Config.orElse(config, (error) => isUnset(error, key) ? Config.succeed(fallback) : Config.fail(error.cause))

/** `config` as an option: none when `key` is unset (missing, or empty where that means unset). */
export const optionWhenUnset = <A>(config: Config.Config<A>, key: string): Config.Config<Option.Option<A>> =>
  withDefaultWhenUnset(Config.map(config, Option.some), key, Option.none<A>())
