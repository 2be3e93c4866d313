/**
 * The one place settings come from: config.env (shell `export KEY="value"`
 * lines, read without running anything), then the environment, then command-line flags, each overriding the
 * one before. Empty values count as unset, as in the original's shell.
 */
import * as fs from "node:fs"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import { describeError } from "../runtime/Errors.js"
import * as LayeredProvider from "./LayeredProvider.js"
import * as ShellAssignment from "./ShellAssignment.js"

/** config.env cannot be read, or a line of it is not a setting; `message` names the file and line, never a value. */
export class ConfigFileError extends Data.TaggedError("ConfigFileError")<{
  readonly reason: "unreadable" | "syntax"
  readonly file: string
  readonly message: string
}> {}

/**
 * Parses config.env text, shell style (see ShellAssignment): `$VAR` and
 * `${VAR}` read earlier lines first, then `environment`. A line that is not
 * an assignment is an error naming its line, without repeating it: it may
 * be a secret pasted on its own. CR LF line ends are fine; a stray CR inside
 * a value is kept, for the key's own check to name it.
 */
export const parse = (
  text: string,
  source = "config.env",
  environment: Record<string, string | undefined> = {}
): Result.Result<Map<string, string>, string> => {
  const values = new Map<string, string>()
  const lookup = (name: string) => values.get(name) ?? environment[name]
  const lines = text.replace(/^\uFEFF/, "").split("\n")
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!.replace(/\r$/, "")
    const parsed = ShellAssignment.parse(line, lookup)
    if (Result.isFailure(parsed)) {
      return Result.fail(`${source}:${index + 1}: ${parsed.failure}; the line is not shown, as it may hold a secret`)
    }
    if (parsed.success !== undefined) values.set(parsed.success.key, parsed.success.value)
  }
  return Result.succeed(values)
}

const nonEmpty = (entries: Iterable<readonly [string, string | undefined]>): Map<string, string> => {
  const map = new Map<string, string>()
  for (const [key, value] of entries) if (value !== undefined && value !== "") map.set(key, value)
  return map
}

const unreadable = (file: string, error: unknown) =>
  Effect.fail(new ConfigFileError({ reason: "unreadable", file, message: `cannot read ${file}: ${describeError(error)}` }))

/**
 * Reads config.env if present; a missing file is no settings. Present means
 * any directory entry: a symbolic link to nothing (or in a loop) is an
 * unreadable config.env, not an absent one, or its settings would be
 * silently missing and `init` would see nothing to make. Only "no such
 * entry" is absent: a home that cannot be searched (EACCES) or is no
 * directory (ENOTDIR) leaves config.env unreadable, for the same reason.
 */
export const read = (
  file: string,
  environment: Record<string, string | undefined> = process.env
): Effect.Effect<Map<string, string>, ConfigFileError> =>
  Effect.suspend(() => {
    const entry = Result.try(() => fs.lstatSync(file, { throwIfNoEntry: false }))
    if (Result.isFailure(entry)) return unreadable(file, entry.failure)
    if (entry.success === undefined) return Effect.succeed(new Map())
    const text = Result.try(() => fs.readFileSync(file, "utf8"))
    if (Result.isFailure(text)) return unreadable(file, text.failure)
    return Result.match(parse(text.success, file, environment), {
      onFailure: (message) => Effect.fail(new ConfigFileError({ reason: "syntax", file, message })),
      onSuccess: (values) => Effect.succeed(nonEmpty(values))
    })
  })

/**
 * flags, then environment, then file, then `defaults`: the first that has a
 * key wins (see LayeredProvider: a value refused there is refused, naming
 * the key, even when a later source has a good one). `withdrawnSecrets` are
 * the environment's secrets, taken out of `process.env` at start-up (see
 * Secrets.withdraw): they rank as the environment does.
 */
export const provider = (options: {
  readonly file: Map<string, string>
  readonly environment: Record<string, string | undefined>
  readonly withdrawnSecrets?: ReadonlyMap<string, string>
  readonly flags: Map<string, string>
  readonly defaults?: Map<string, string>
}): ConfigProvider.ConfigProvider =>
  LayeredProvider.layered([
    options.flags,
    nonEmpty([...Object.entries(options.environment), ...(options.withdrawnSecrets ?? new Map())]),
    options.file,
    ...(options.defaults === undefined ? [] : [options.defaults])
  ])
