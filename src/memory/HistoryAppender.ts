/**
 * The append path of history.jsonl, with the ledger that names each keyed
 * exchange's byte range before it is written (Ledger.ts). Both files are
 * held open for appending between turns (O_APPEND); each append checks by
 * lstat that the path still names the held file (a compaction renames new
 * files in place). The ledger is kept in memory as this process last read
 * or wrote it, and grows by one appended record per exchange (LedgerFile.ts).
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import * as CommitMirror from "./CommitMirror.js"
import { look } from "./FileCache.js"
import { encodeEntry, type HistoryEntry, readRange, scanTail } from "./HistoryFile.js"
import * as Ledger from "./Ledger.js"
import * as LedgerFile from "./LedgerFile.js"
import type * as Layout from "./Layout.js"
import { type AloneOutcome, fromFileError, type MemoryError } from "./MemoryDir.js"
import * as SafeFile from "../runtime/SafeFile.js"

export interface AppendOptions {
  /**
   * The journal's key of this exchange: nothing is written when history
   * already holds this very exchange (a replay after a crash), however
   * alike its text is to others.
   */
  readonly exchange?: string
  /** For an exchange journaled without a key (an older journal): nothing is written when history ends with these lines. */
  readonly unlessLast?: boolean
}

export interface HistoryAppender {
  /** Appends lines to history: all of them, or nothing. To be run under the directory's write lock. */
  readonly writeLines: (entries: ReadonlyArray<HistoryEntry>, options: AppendOptions | undefined) => () => Result.Result<void, MemoryError>
  /**
   * The append of a keyed exchange when history and ledger are as this
   * process left them after its last append (one lstat of history tells;
   * any commit replaces history, so an unchanged history means an
   * unchanged ledger): two writes, ledger then history. Locked when
   * anything is not known so (the caller then runs `writeLines` under the lock).
   */
  readonly writeAlone: (entries: ReadonlyArray<HistoryEntry>, key: string) => Result.Result<AloneOutcome<void>, MemoryError>
  /** After `writeAlone` was Done and no compaction lock seen: the file written to is still history (not renamed over). */
  readonly stillLinked: () => boolean
  /**
   * Takes over the files a compaction of this process just swapped in
   * (their descriptors, and what they hold), so the next append needs
   * neither the lock nor a read of the new ledger.
   */
  readonly adopt: (committed: CommitMirror.Committed) => void
  /** The ledger as this appender last wrote or read it, when the file is still so (one lstat); else undefined. */
  readonly knownLedger: () => Ledger.Ledger | undefined
  /** Closes the held descriptors; an append after it opens them again. */
  readonly close: () => void
  /** `close`, and forgets what it knew of history and ledger (a forget moved them away). */
  readonly reset: () => void
}

/**
 * `appended(fd, ino, size, end, entries)` is told of every append that
 * landed, still under the lock, so the caches of what history holds follow
 * this process's own writes without reading them back.
 */
export const make = (
  paths: Layout.Paths,
  appended: (fd: number, ino: number, size: number, end: number, entries: ReadonlyArray<HistoryEntry>) => void,
  mirror: () => CommitMirror.CommitMirror | undefined = () => undefined,
  options: { readonly fresh?: boolean | undefined } = {}
): HistoryAppender => {
  let historyFd: SafeFile.Held | undefined
  const ledgerFile = LedgerFile.make(paths.ledger)
  // history.jsonl as this process left it after its last append.
  let lastEnd: { readonly ino: number; readonly size: number } | undefined
  // The directory was made just now and nothing was appended yet: the first append may make both files itself.
  let unstarted = options.fresh === true

  /**
   * History and ledger made empty by this process (O_EXCL), held, and known
   * so: the first append of a directory made just now then needs no lock.
   * False when either could not be made (one made meanwhile, or a failure
   * the locked append then meets and reports).
   */
  const startBoth = (): boolean => {
    const history = SafeFile.openWithStat(paths.history, SafeFile.flags.createNewAppendable)
    if (Result.isFailure(history)) return false
    const ino = history.success.stat.ino
    if (!ledgerFile.startEmpty(ino)) {
      SafeFile.closeHeld(history.success)
      return false
    }
    historyFd = { fd: history.success.fd, ino }
    lastEnd = { ino, size: 0 }
    return true
  }

  const writeLines = (entries: ReadonlyArray<HistoryEntry>, options: AppendOptions | undefined) =>
  (): Result.Result<void, MemoryError> => {
    unstarted = false
    const historyStat = look(paths.history)
    if (Result.isFailure(historyStat)) return Result.fail(fromFileError(historyStat.failure))
    const held = SafeFile.heldFor(paths.history, historyFd, historyStat.success)
    if (Result.isFailure(held)) {
      historyFd = undefined
      return Result.fail(fromFileError(held.failure))
    }
    const fd = held.success.fd
    historyFd = { fd, ino: held.success.ino }
    const ino = held.success.ino
    const size = held.success.stat?.size ?? 0
    const text = entries.map((entry) => `${encodeEntry(entry)}\n`).join("")
    const key = options?.exchange
    const current = key === undefined ? Result.succeed(undefined) : ledgerFile.current()
    if (Result.isFailure(current)) return Result.fail(fromFileError(current.failure))
    const ledger = current.success?.ledger ?? Ledger.empty
    if (key !== undefined && Ledger.holds(ledger, fd, ino, size, key, text)) return Result.succeed(undefined)
    if (key === undefined && options?.unlessLast === true) {
      const last = readRange(fd, scanTail(fd, entries.length).offset, size)
      if (last === text || `${last}\n` === text) return Result.succeed(undefined)
    }
    // A file cut short by hand or by a crash must not glue two lines
    // together: known when history is as this process left it, else read.
    const ownEnd = lastEnd !== undefined && lastEnd.ino === ino && lastEnd.size === size
    const prefix = size === 0 || ownEnd || endsWithNewlineAt(fd, size) ? "" : "\n"
    const bytes = Buffer.from(prefix + text, "utf8")
    if (key !== undefined) {
      // Written ahead: names the range before it is filled, so a crash in between is seen.
      const noted = ledgerFile.noteAhead(ledger, current.success?.stat, ino, key, size + prefix.length, size + bytes.length)
      if (Result.isFailure(noted)) return Result.fail(fromFileError(noted.failure))
    }
    const written = SafeFile.appendAll(fd, paths.history, bytes, size)
    if (Result.isFailure(written)) return Result.fail(fromFileError(written.failure))
    // Only a commit alongside the appends copies them, and such a commit holds every locked section back.
    const copying = mirror()
    if (copying !== undefined) CommitMirror.cannotCopy(copying)
    const end = size + bytes.length
    lastEnd = { ino, size: end }
    appended(fd, ino, size, end, entries)
    return Result.succeed(undefined)
  }

  const locked: AloneOutcome<void> = { _tag: "Locked" }
  const done: AloneOutcome<void> = { _tag: "Done", value: undefined }

  const writeAlone = (entries: ReadonlyArray<HistoryEntry>, key: string): Result.Result<AloneOutcome<void>, MemoryError> => {
    // Made empty just now, by this very call: nothing to check of it yet.
    let made = false
    if (unstarted) {
      unstarted = false
      if (historyFd === undefined) {
        if (!startBoth()) return Result.succeed(locked)
        made = true
      }
    }
    const history = historyFd
    const end = lastEnd
    if (history === undefined || end === undefined || end.ino !== history.ino || !ledgerFile.canNoteAlone(history.ino, key)) {
      return Result.succeed(locked)
    }
    if (!made) {
      const stat = look(paths.history)
      if (Result.isFailure(stat)) return Result.fail(fromFileError(stat.failure))
      if (stat.success === undefined || stat.success.ino !== end.ino || stat.success.size !== end.size) return Result.succeed(locked)
    }
    const size = end.size
    const bytes = Buffer.from(entries.map((entry) => `${encodeEntry(entry)}\n`).join(""), "utf8")
    // Written ahead: names the range before it is filled, so a crash in between is seen.
    const noted = ledgerFile.noteAlone(history.ino, key, size, size + bytes.length)
    if (Result.isFailure(noted)) return Result.fail(fromFileError(noted.failure))
    const written = SafeFile.appendAll(history.fd, paths.history, bytes, size)
    if (Result.isFailure(written)) return Result.fail(fromFileError(written.failure))
    // A compaction committing meanwhile gets the exchange too, before it counts as stored.
    const copying = mirror()
    if (copying !== undefined) CommitMirror.copyAppend(copying, history.ino, size, bytes, { key, start: size, end: size + bytes.length })
    lastEnd = { ino: history.ino, size: size + bytes.length }
    appended(history.fd, history.ino, size, size + bytes.length, entries)
    return Result.succeed(done)
  }

  const adopt = ({ history, ledger }: CommitMirror.Committed) => {
    // The old file was just renamed over: its last close frees its blocks
    // (0.5 ms of the thread in a trace), so it goes to the thread pool.
    if (historyFd !== undefined) fs.close(historyFd.fd, () => undefined)
    historyFd = { fd: history.fd, ino: history.inode }
    lastEnd = { ino: history.inode, size: history.size }
    ledgerFile.adopt(ledger)
  }

  const close = () => {
    // Forgotten, not only closed: a later append must not write to a descriptor number reused by another file.
    SafeFile.closeHeld(historyFd)
    historyFd = undefined
    ledgerFile.close()
  }

  const reset = () => {
    unstarted = false
    close()
    ledgerFile.forget()
    lastEnd = undefined
  }

  /**
   * After an append without the lock, once no compaction lock was seen:
   * the history written to is still linked. A compaction of another
   * process that read history before the write and renamed its own in
   * before that look left it unlinked, the exchange with it.
   */
  const stillLinked = (): boolean => {
    const history = historyFd
    const stat = history === undefined ? undefined : Result.try(() => fs.fstatSync(history.fd))
    return stat !== undefined && Result.isSuccess(stat) && stat.success.nlink > 0
  }

  return { writeLines, writeAlone, stillLinked, adopt, knownLedger: ledgerFile.known, close, reset }
}

/** Whether history, `size` bytes long, is empty or ends with a newline: one pread(2). */
const endsWithNewlineAt = (fd: number, size: number): boolean => {
  if (size === 0) return true
  const last = Buffer.allocUnsafe(1)
  return fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a
}
