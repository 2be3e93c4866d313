/**
 * The host's soul, for an agent without one of its own: its file read as a
 * snapshot reads soul.md, kept while one lstat(2) finds it unchanged, so an
 * edit applies to the next turn without the file being read on every turn.
 * Absent, empty or unusable (a link, someone else's file): the built-in
 * persona. Over its limit: a failure that says so. The file memory's
 * snapshots (SnapshotReader) and PostgreSQL's (SqlMemory, the cluster's
 * TurnReads) read it alike.
 */
import * as Result from "effect/Result"
import type { CachedText } from "./FileCache.js"
import type { MemoryError } from "./MemoryDir.js"
import { DEFAULT_SOUL } from "./MemorySnapshot.js"
import { textOf } from "./PromptFileCache.js"

/** The soul to use, each call; share one among a host's agents: it keeps the text once. */
export type Reader = () => Result.Result<string, MemoryError>

/** The soul to use, read from `file` (DEFAULT_SOUL without one), with its own cache. */
export const reader = (file: string | undefined): Reader => {
  if (file === undefined) return () => Result.succeed(DEFAULT_SOUL)
  let cache: CachedText | undefined
  return () => {
    const text = textOf(file, cache, (read) => cache = read)
    if (Result.isFailure(text) && text.failure._tag === "MemoryError") return Result.fail(text.failure)
    const soul = (Result.getOrUndefined(text) ?? "").trim()
    return Result.succeed(soul.length > 0 ? soul : DEFAULT_SOUL)
  }
}

/** An agent's own soul as the database holds it (trimmed), else the host's from `fallback`. */
export const ownOr = (own: string | null | undefined, fallback: Reader): Result.Result<string, MemoryError> => {
  const text = (own ?? "").trim()
  return text.length > 0 ? Result.succeed(text) : fallback()
}
