/**
 * Memory files as last seen, so a store reads a file again only when its
 * status changed: the status kept, how it is compared, and the read that
 * takes it. Used by the snapshot's caches (SnapshotReader.ts) and the
 * ledger's (HistoryAppender.ts).
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as SafeFile from "../runtime/SafeFile.js"

/**
 * A file as last seen: inode, size and times. Times are unknown right after
 * this process's own write (write(2) does not return them); the next look
 * that finds the inode and size this process left takes them.
 */
export interface Seen {
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number | undefined
  readonly ctimeMs: number | undefined
  /**
   * With the times unknown: the latest change time this process's own step
   * explains. A later one is another writer's (a same-size edit by hand),
   * which inode and size alone would miss.
   */
  readonly leftAtMs?: number
}

export const seenOf = (stat: fs.Stats): Seen => ({ ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs })

/**
 * A file as this process has just left it (written, or read while racily
 * clean): inode and size, times unknown. File times come from the kernel's
 * coarse clock, never ahead of the real-time one; the millisecond added
 * covers `Date.now()`'s rounding down.
 */
export const justLeft = (ino: number, size: number): Seen =>
  ({ ino, size, mtimeMs: undefined, ctimeMs: undefined, leftAtMs: Date.now() + 1 })

export const unchanged = (seen: Seen, stat: fs.Stats): boolean =>
  seen.ino === stat.ino && seen.size === stat.size &&
  (seen.mtimeMs === undefined
    ? stat.ctimeMs <= (seen.leftAtMs ?? Infinity)
    : seen.mtimeMs === stat.mtimeMs && seen.ctimeMs === stat.ctimeMs)

/**
 * A file modified this close to when it was read may be modified again
 * within the same timestamp tick without its status changing: its cached
 * content is not trusted by status until it is older (git's "racily
 * clean"). File times come from the kernel's coarse clock, at worst one
 * tick (10 ms at HZ=100) behind the real-time clock; 100 ms is ten ticks.
 */
export const RACY_MS = 100

/**
 * Sets a file this process is about to rename into place (a compaction's
 * summary.md) to a modification time RACY_MS×10 in the past. No later
 * write can then leave that time unchanged (the kernel stamps it with the
 * present), so the file is trusted by status from its first read instead of
 * being read again on every message for RACY_MS after each compaction. The
 * change time stays true. A refusal only costs those reads.
 */
export const settle = (fd: number): void => {
  const now = Date.now()
  Result.try(() => fs.futimesSync(fd, now / 1000, (now - 10 * RACY_MS) / 1000))
}

/** lstat(2) of a memory file: undefined when absent; a link, a non-regular file or someone else's is refused. */
export const look = (file: string): Result.Result<fs.Stats | undefined, SafeFile.MemoryFileError> => {
  const stat = Result.try(() => fs.lstatSync(file, { throwIfNoEntry: false }))
  if (Result.isFailure(stat)) return Result.fail(SafeFile.failed(file, stat.failure))
  if (stat.success === undefined) return Result.succeed(undefined)
  const refused = SafeFile.refusal(file, stat.success)
  return refused === undefined ? Result.succeed(stat.success) : Result.fail(refused)
}

/** A hand-editable text file (soul.md, summary.md) read again only when its status changed. */
export interface CachedText {
  readonly seen: Seen | undefined
  readonly text: string | undefined
  /** Read less than RACY_MS after its last modification: read again next time. */
  readonly racy: boolean
}

export const readText = (file: string): Result.Result<CachedText, SafeFile.MemoryFileError> =>
  // No size is over Infinity: the refusal is never made.
  readTextUpTo(file, Infinity, (size) => SafeFile.failed(file, new Error(`${size} bytes is too large to read`)))

/**
 * `readText`, refusing a file over `maxBytes` by its size on the open
 * descriptor, before reading a byte of it: `tooLarge(size)` is the refusal.
 * `found`: an lstat has just found the file, so it is opened without another.
 */
export const readTextUpTo = <E>(
  file: string,
  maxBytes: number,
  tooLarge: (size: number) => E,
  found = false
): Result.Result<CachedText, SafeFile.MemoryFileError | E> => {
  const opened = (found ? SafeFile.openFound : SafeFile.openIfPresent)(file, SafeFile.flags.read)
  if (Result.isFailure(opened)) return Result.fail(opened.failure)
  if (opened.success === undefined) return Result.succeed({ seen: undefined, text: undefined, racy: false })
  const { fd, stat } = opened.success
  if (stat.size > maxBytes) {
    Result.try(() => fs.closeSync(fd))
    return Result.fail(tooLarge(stat.size))
  }
  const text = Result.try({ try: () => fs.readFileSync(fd, "utf8"), catch: (error) => SafeFile.failed(file, error) })
  Result.try(() => fs.closeSync(fd))
  return Result.map(text, (text) => ({ seen: seenOf(stat), text, racy: Date.now() - stat.mtimeMs < RACY_MS }))
}

/** The cached text when `stat` (undefined: absent) says the file has not changed since it was read. */
export const cachedText = (cache: CachedText | undefined, stat: fs.Stats | undefined): Option.Option<string | undefined> => {
  if (cache === undefined || cache.racy) return Option.none()
  if (stat === undefined) return cache.seen === undefined ? Option.some(undefined) : Option.none()
  return cache.seen !== undefined && unchanged(cache.seen, stat) ? Option.some(cache.text) : Option.none()
}
