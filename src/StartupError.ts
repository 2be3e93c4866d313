/**
 * A reason the command cannot start or finish (missing key, bad setting,
 * memory directory in use). The entry point prints `message` on one line,
 * without a stack trace, and exits with `exitCode`.
 */
import * as Data from "effect/Data"

export class StartupError extends Data.TaggedError("StartupError")<{
  readonly message: string
  readonly exitCode: number
}> {}
