/**
 * The memory directory's error, setting and the file helpers every store
 * on it uses (re-exported by MemoryDir.ts).
 */
import type * as fs from "node:fs"
import * as path from "node:path"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { textOf } from "../config/ConfigRange.js"
import { MemoryDir } from "../config/settings/Memory.js"
import { describeError } from "../runtime/Errors.js"
import * as SafeFile from "../runtime/SafeFile.js"

export class MemoryError extends Data.TaggedError("MemoryError")<{
  /**
   * `unwritable`: the directory cannot be written, or a memory file may not
   * be used (a link, not a regular file, someone else's); `locked`: the
   * write lock stayed held or could not be made; `replaced`: history was
   * replaced or shortened under a compaction; `oversize`: soul.md or
   * summary.md is over its limit (PromptFiles); `io`: any other failure.
   */
  readonly reason: "unwritable" | "locked" | "io" | "replaced" | "oversize"
  readonly message: string
  /** What the user is told when this keeps a turn from being answered: a few words, never a path. */
  readonly problem?: string
  readonly cause?: unknown
  /** Already logged (a store failure is logged once, not once per turn). */
  readonly reported?: boolean
}> {}

/** Another compaction holds the memory directory. */
export class CompactionBusy extends Data.TaggedError("CompactionBusy")<{
  readonly ownerPid: number
}> {}

export const MemoryConfig = textOf(MemoryDir).pipe(Config.map((dir) => path.resolve(dir)))

/** Runs a synchronous file operation; a throw is a MemoryError naming `what`. */
export const fsEffect = <A>(
  what: string,
  run: () => Result.Result<A, MemoryError>,
  reason: MemoryError["reason"] = "io"
): Effect.Effect<A, MemoryError> =>
  Effect.suspend(() => {
    const ran = Result.try({ try: run, catch: (cause) => new MemoryError({ reason, message: `${what}: ${describeError(cause)}`, cause }) })
    return Effect.fromResult(Result.isSuccess(ran) ? ran.success : Result.fail(ran.failure))
  })

export const fromFileError = (error: SafeFile.MemoryFileError) =>
  new MemoryError({ reason: error._tag === "MemoryFileRefused" ? "unwritable" : "io", message: error.message, cause: error })

/** Runs `use` on the open history file; a missing file is `absent`. */
export const withHistory = <A>(
  file: string,
  how: number,
  absent: A,
  use: (fd: number, stat: fs.Stats) => Result.Result<A, MemoryError>
): Result.Result<A, MemoryError> => {
  const result = SafeFile.withFileIfPresent(file, how, absent, use)
  if (Result.isSuccess(result)) return Result.succeed(result.success)
  const error = result.failure
  return Result.fail(error._tag === "MemoryError" ? error : fromFileError(error))
}
