/**
 * The one place settings come from: config.env (shell `export KEY="value"`
 * lines), then the environment, then command-line flags, each overriding the
 * one before. Empty values count as unset, as in the original's shell.
 */
import * as fs from "node:fs"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import { describeError } from "../Errors.js"

/** config.env cannot be read, or a line of it is not a setting; `message` names the file and line, never a value. */
export class ConfigFileError extends Data.TaggedError("ConfigFileError")<{
  readonly reason: "unreadable" | "syntax"
  readonly file: string
  readonly message: string
}> {}

// `s`: a stray CR inside a value is kept, for the key's own check to name it.
const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/s

const unquote = (raw: string): Either.Either<string, string> => {
  if (raw.startsWith("\"")) {
    if (!raw.endsWith("\"") || raw.length < 2) return Either.left("unterminated double quote")
    return Either.right(raw.slice(1, -1).replace(/\\(["\\$`])/g, "$1"))
  }
  if (raw.startsWith("'")) {
    if (!raw.endsWith("'") || raw.length < 2) return Either.left("unterminated single quote")
    return Either.right(raw.slice(1, -1))
  }
  // Unquoted: a trailing comment is not part of the value.
  return Either.right(raw.replace(/\s+#.*$/, ""))
}

/**
 * Parses config.env text; a line that is not `KEY=value` is an error naming
 * its line, without repeating it: it may be a secret pasted on its own.
 */
export const parse = (text: string, source = "config.env"): Either.Either<Map<string, string>, string> => {
  const values = new Map<string, string>()
  const lines = text.split(/\r?\n/)
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!
    if (/^\s*(#.*)?$/.test(line)) continue
    const match = LINE.exec(line)
    if (match === null) {
      return Either.left(
        `${source}:${index + 1}: expected KEY="value" (optionally after export); the line is not shown, as it may hold a secret`
      )
    }
    const value = unquote(match[2]!)
    if (Either.isLeft(value)) return Either.left(`${source}:${index + 1}: ${value.left}`)
    values.set(match[1]!, value.right)
  }
  return Either.right(values)
}

const nonEmpty = (entries: Iterable<readonly [string, string | undefined]>): Map<string, string> => {
  const map = new Map<string, string>()
  for (const [key, value] of entries) if (value !== undefined && value !== "") map.set(key, value)
  return map
}

/** Reads config.env if present; a missing file is no settings. */
export const read = (file: string): Effect.Effect<Map<string, string>, ConfigFileError> =>
  Effect.suspend(() => {
    if (!fs.existsSync(file)) return Effect.succeed(new Map())
    const text = Either.try(() => fs.readFileSync(file, "utf8"))
    if (Either.isLeft(text)) {
      return Effect.fail(
        new ConfigFileError({ reason: "unreadable", file, message: `cannot read ${file}: ${describeError(text.left)}` })
      )
    }
    return Either.match(parse(text.right, file), {
      onLeft: (message) => Effect.fail(new ConfigFileError({ reason: "syntax", file, message })),
      onRight: (values) => Effect.succeed(nonEmpty(values))
    })
  })

/**
 * flags, then environment, then file: the first that has a key wins.
 * `withdrawnSecrets` are the environment's secrets, taken out of
 * `process.env` at start-up (see Secrets.withdraw): they rank as the
 * environment does.
 */
export const provider = (options: {
  readonly file: Map<string, string>
  readonly environment: Record<string, string | undefined>
  readonly withdrawnSecrets?: ReadonlyMap<string, string>
  readonly flags: Map<string, string>
}): ConfigProvider.ConfigProvider =>
  ConfigProvider.fromMap(options.flags).pipe(
    ConfigProvider.orElse(() =>
      ConfigProvider.fromMap(
        nonEmpty([...Object.entries(options.environment), ...(options.withdrawnSecrets ?? new Map())])
      )
    ),
    ConfigProvider.orElse(() => ConfigProvider.fromMap(options.file))
  )
