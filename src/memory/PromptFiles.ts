/**
 * soul.md and summary.md go whole into every request's system prompt, so
 * each has a limit: a larger one makes every request one the API refuses
 * (too large) or answers at a ruinous price. Checked at start (`run`,
 * `serve` for the host's default soul and each agent's files, `compact`),
 * by `doctor`, and at each turn that finds one changed (SnapshotReader):
 * the refusal names the file and the limit, never the apology for an
 * outage that would not pass.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Result from "effect/Result"
import { MemoryError } from "./MemoryFiles.js"

/** The most a soul or summary may hold: far above a persona or a compaction's summary (2048 tokens), far below any context window. */
export const PROMPT_FILE_MAX_BYTES = 256 * 1024

/** The limit as people read it. */
export const LIMIT_TEXT = "256 KiB"

const sizeText = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`

/** What the user is told (no path): `soul.md is 20.0 MiB, over the 256 KiB limit`. */
export const problemOf = (file: string, size: number): string =>
  `${path.basename(file)} is ${sizeText(size)}, over the ${LIMIT_TEXT} limit`

/** What the log and a refusal at start say: the file, its size and the limit. */
export const describeTooLarge = (file: string, size: number): string =>
  `${file} is ${size} bytes; a soul or summary may hold at most ${PROMPT_FILE_MAX_BYTES} bytes (${LIMIT_TEXT}), ` +
  "since every request carries it whole"

export const tooLarge = (file: string, size: number): MemoryError =>
  new MemoryError({ reason: "oversize", message: `${describeTooLarge(file, size)}: shorten it`, problem: problemOf(file, size) })

/** The size of `file` when it is over the limit; undefined when it is within it, absent or cannot be looked at (a read says why). */
export const oversizeOf = (file: string): number | undefined => {
  const stat = Result.getOrUndefined(Result.try(() => fs.statSync(file, { throwIfNoEntry: false })))
  return stat !== undefined && stat.size > PROMPT_FILE_MAX_BYTES ? stat.size : undefined
}

/** Refuses `file` (a soul or summary) when it is over the limit. */
export const check = (file: string): Result.Result<void, MemoryError> => {
  const size = oversizeOf(file)
  return size === undefined ? Result.succeed(undefined) : Result.fail(tooLarge(file, size))
}

/** Refuses the first of `files` over the limit. */
export const checkAll = (files: ReadonlyArray<string>): Result.Result<void, MemoryError> => {
  for (const file of files) {
    const checked = check(file)
    if (Result.isFailure(checked)) return checked
  }
  return Result.succeed(undefined)
}
