/**
 * soul.md and summary.md as a snapshot reads them: a file is its cached
 * text while one lstat(2) finds it unchanged, else read again, refused
 * unread when over its limit (PromptFiles). Apart from SnapshotReader.ts,
 * which keeps the caches, so that file reads in one sitting.
 */
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import { cachedText, type CachedText, look, readTextUpTo } from "./FileCache.js"
import type { MemoryError } from "./MemoryDir.js"
import * as PromptFiles from "./PromptFiles.js"
import type * as SafeFile from "../runtime/SafeFile.js"

/** soul.md or summary.md as read: its text (undefined: absent), or why not (MemoryError: over its limit). */
export type PromptRead = Result.Result<string | undefined, SafeFile.MemoryFileError | MemoryError>

/** A soul or summary, refused unread when it is over its limit; `found`: an lstat has just found it. */
export const readPrompt = (file: string, found = false) =>
  readTextUpTo(file, PromptFiles.PROMPT_FILE_MAX_BYTES, (size) => PromptFiles.tooLarge(file, size), found)

/** `file`'s text: `cache`'s while one lstat finds the file unchanged, else read anew and `remember`ed. */
export const textOf = (
  file: string,
  cache: CachedText | undefined,
  remember: (cache: CachedText) => void
): PromptRead => {
  const stat = look(file)
  if (Result.isFailure(stat)) return Result.fail(stat.failure)
  const cached = cachedText(cache, stat.success)
  if (Option.isSome(cached)) return Result.succeed(cached.value)
  if (stat.success === undefined) {
    // Absent when looked at: as if opened then, without an open(2) bound to fail.
    remember({ seen: undefined, text: undefined, racy: false })
    return Result.succeed(undefined)
  }
  return Result.map(readPrompt(file, true), (read) => {
    remember(read)
    return read.text
  })
}
