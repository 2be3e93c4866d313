/**
 * Forgetting: the agent's history, summary and ledger moved into
 * `archive/<UTC timestamp>/` inside the memory directory, so the next
 * message starts afresh and nothing is deleted. The move is a commit like a
 * compaction's (Layout.ts): the archive directory is made, then a journal
 * naming it appears (the commit point), then the files are renamed into it.
 * A kill before the journal leaves the old memory (and an empty archive
 * directory); after it, recovery finishes the renames: the fresh memory.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Layout from "./Layout.js"
import { describeError, errnoCode } from "../runtime/Errors.js"
import { fromFileError, MemoryError } from "./MemoryDir.js"

/** What a forget would archive now. */
export interface ForgetPreview {
  /** Lines of history.jsonl (each a user or an assistant message). */
  readonly historyLines: number
  readonly historyBytes: number
  readonly summaryBytes: number
  /** Where the archive would go, in words, when not archive/ in the memory directory (memory in a database). */
  readonly location?: string
}

/** What a forget archived: the archive, relative to the memory directory, and the files moved there. */
export interface Forgotten {
  readonly archive: string
  readonly files: ReadonlyArray<string>
  /** Where the archive is, in words, when not `<archive>/` in the memory directory (memory in a database). */
  readonly location?: string
}

const sizeOf = (file: string): number | undefined => {
  const stat = Result.getOrUndefined(Result.try(() => fs.lstatSync(file, { throwIfNoEntry: false })))
  return stat?.isFile() === true ? stat.size : undefined
}

/** Counts newlines in blocks: a forget is rare, and people count messages, not bytes. */
const countLines = (file: string, size: number): number => {
  if (size === 0) return 0
  const counted = Result.try(() => {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
    try {
      const block = Buffer.allocUnsafe(64 * 1024)
      let lines = 0
      let last = 0x0a
      for (let offset = 0; offset < size;) {
        const read = fs.readSync(fd, block, 0, block.length, offset)
        if (read === 0) break
        for (let index = 0; index < read; index++) if (block[index] === 0x0a) lines++
        last = block[read - 1]!
        offset += read
      }
      // A last line without its newline is still a line.
      return last === 0x0a ? lines : lines + 1
    } finally {
      fs.closeSync(fd)
    }
  })
  return Result.getOrElse(counted, () => 0)
}

export const preview = (paths: Layout.Paths): ForgetPreview => {
  const historyBytes = sizeOf(paths.history) ?? 0
  return { historyLines: countLines(paths.history, historyBytes), historyBytes, summaryBytes: sizeOf(paths.summary) ?? 0 }
}

/** Nothing worth an archive: no history line and no summary. */
export const isEmpty = (found: ForgetPreview): boolean => found.historyBytes === 0 && found.summaryBytes === 0

/** `2026-11-30T19:05:12.345Z` as a directory name: `2026-11-30T19-05-12Z`. */
export const stampOf = (millis: number): string => new Date(millis).toISOString().replace(/\.\d+Z$/, "Z").replace(/:/g, "-")

/** A fresh directory archive/<stamp> (then -2, -3… when one forget follows another within a second). */
const makeArchive = (directory: string, stamp: string): Result.Result<string, MemoryError> => {
  const parent = path.join(directory, Layout.ARCHIVE_DIR)
  for (let attempt = 1; ; attempt++) {
    const name = `${Layout.ARCHIVE_DIR}/${attempt === 1 ? stamp : `${stamp}-${attempt}`}`
    const made = Result.try(() => {
      if (!fs.existsSync(parent)) fs.mkdirSync(parent, { mode: 0o700 })
      fs.mkdirSync(path.join(directory, name), { mode: 0o700 })
    })
    if (Result.isSuccess(made)) return Result.succeed(name)
    if (errnoCode(made.failure) !== "EEXIST") {
      return Result.fail(
        new MemoryError({ reason: "io", message: `cannot make ${path.join(directory, name)}: ${describeError(made.failure)}`, cause: made.failure })
      )
    }
  }
}

/**
 * Moves history, summary and ledger into a new archive; none when there is
 * nothing to forget. To be run under the directory's write lock (after its
 * recovery), by the history store, which then drops what it caches.
 */
export const commit = (directory: string, paths: Layout.Paths, stamp: string): Result.Result<Option.Option<Forgotten>, MemoryError> => {
  if (isEmpty(preview(paths))) return Result.succeed(Option.none())
  const made = makeArchive(directory, stamp)
  if (Result.isFailure(made)) return Result.fail(made.failure)
  const archive = made.success
  // The files go by rename, which cannot cross into another file system (archive/ a link or a mount there):
  // refused now, before the commit point, rather than a journal whose renames fail at every locked section after it.
  const elsewhere = Result.try(() => fs.statSync(path.join(directory, archive)).dev !== fs.statSync(directory).dev)
  if (Result.isFailure(elsewhere) || elsewhere.success) {
    Result.try(() => fs.rmdirSync(path.join(directory, archive)))
    return Result.fail(
      new MemoryError({
        reason: "io",
        message: Result.isFailure(elsewhere)
          ? `cannot look at ${path.join(directory, archive)}: ${describeError(elsewhere.failure)}`
          : `${path.join(directory, Layout.ARCHIVE_DIR)} is on another file system than ${directory} (a link or a mount), ` +
            "and forgetting moves the files there by rename: make it a directory of the memory directory's own file system"
      })
    )
  }
  // A compaction's leftovers (no journal: never committed) must not be read as part of this commit.
  for (const next of [paths.nextSummary, paths.nextHistory, paths.nextLedger]) Result.try(() => fs.unlinkSync(next))
  const files = Layout.forgotten(paths).filter((file) => fs.existsSync(file)).map((file) => path.basename(file))
  // The journal is the commit point: from here recovery moves the files instead of leaving them.
  const journaled = Layout.writeNew(paths.journal, Layout.forgetJournal(archive))
  if (Result.isFailure(journaled)) {
    Result.try(() => fs.rmdirSync(path.join(directory, archive)))
    return Result.fail(fromFileError(journaled.failure))
  }
  Layout.syncDirectory(directory)
  Layout.recover(paths)
  Layout.syncDirectory(path.join(directory, archive))
  Layout.syncDirectory(directory)
  return Result.succeed(Option.some({ archive, files }))
}
