/**
 * The append path of history.jsonl, with the ledger that names each keyed
 * exchange's byte range before it is written (Ledger.ts). Both files are
 * held open for appending between turns (O_APPEND); each append checks by
 * lstat that the path still names the held file (a compaction renames new
 * files in place). The ledger is kept in memory as this process last read
 * or wrote it, and grows by one appended record per exchange.
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import * as CommitMirror from "./CommitMirror.js"
import { look, readText, type Seen, seenOf, unchanged } from "./FileCache.js"
import { encodeEntry, type HistoryEntry, readRange, scanTail } from "./HistoryFile.js"
import * as Ledger from "./Ledger.js"
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
  mirror: () => CommitMirror.CommitMirror | undefined = () => undefined
): HistoryAppender => {
  let historyFd: { readonly fd: number; readonly ino: number } | undefined
  let ledgerFd: { readonly fd: number; readonly ino: number } | undefined
  // The ledger as this process last read or wrote it.
  let ledgerCache: {
    readonly seen: Seen
    readonly ledger: Ledger.Ledger
    readonly endsWithNewline: boolean
    readonly lines: number
    /** `ledger.exchanges` when this appender made the array and no one else holds it: appended in place. */
    readonly owned?: Ledger.OwnedEntries
  } | undefined
  // history.jsonl as this process left it after its last append.
  let lastEnd: { readonly ino: number; readonly size: number } | undefined

  const closeHeld = (held: { readonly fd: number } | undefined) => {
    if (held !== undefined) Result.try(() => fs.closeSync(held.fd))
  }

  /** The held descriptor of `file` if `stat` is its file, else `file` opened anew (and held). */
  const heldFor = (
    file: string,
    held: { readonly fd: number; readonly ino: number } | undefined,
    stat: fs.Stats | undefined
  ): Result.Result<{ readonly fd: number; readonly ino: number; readonly stat: fs.Stats | undefined }, SafeFile.MemoryFileError> => {
    if (held !== undefined && stat !== undefined && stat.ino === held.ino) return Result.succeed({ ...held, stat })
    closeHeld(held)
    return Result.map(SafeFile.openWithStat(file, SafeFile.flags.append), ({ fd, stat }) => ({ fd, ino: stat.ino, stat }))
  }

  /** The ledger, read again only when its status is not what this process left. */
  const currentLedger = (): Result.Result<{ readonly ledger: Ledger.Ledger; readonly stat: fs.Stats | undefined }, SafeFile.MemoryFileError> =>
    Result.flatMap(look(paths.ledger), (stat) => {
      if (stat === undefined) {
        ledgerCache = undefined
        return Result.succeed({ ledger: Ledger.empty, stat })
      }
      if (ledgerCache !== undefined && unchanged(ledgerCache.seen, stat)) {
        if (ledgerCache.seen.mtimeMs === undefined) ledgerCache = { ...ledgerCache, seen: seenOf(stat) }
        return Result.succeed({ ledger: ledgerCache.ledger, stat })
      }
      return Result.map(readText(paths.ledger), (read) => {
        const text = read.text ?? ""
        const ledger = Ledger.parse(read.text)
        ledgerCache = read.seen === undefined ? undefined : {
          seen: read.racy ? { ...read.seen, mtimeMs: undefined, ctimeMs: undefined } : read.seen,
          ledger,
          endsWithNewline: text.length === 0 || text.endsWith("\n"),
          lines: text.split("\n").length
        }
        return { ledger, stat: read.seen === undefined ? undefined : stat }
      })
    })

  /**
   * No ledger yet (a new agent's first exchange): made by its first record,
   * appended, not written whole through a temporary file (one new inode
   * fewer). A torn line reads as no ledger, as a torn last line is skipped.
   * Undefined when the file was made meanwhile: it is then written whole.
   */
  const startLedger = (next: Ledger.Ledger, record: string): Result.Result<void, SafeFile.MemoryFileError> | undefined => {
    closeHeld(ledgerFd)
    ledgerFd = undefined
    ledgerCache = undefined
    const opened = heldFor(paths.ledger, undefined, undefined)
    if (Result.isFailure(opened)) return Result.fail(opened.failure)
    const bytes = Buffer.from(record, "utf8")
    const { fd, ino, stat } = opened.success
    const written = (stat?.size ?? 0) === 0 ? SafeFile.appendAll(fd, paths.ledger, bytes, 0) : undefined
    if (written === undefined || Result.isFailure(written)) closeHeld(opened.success)
    else {
      ledgerFd = { fd, ino }
      ledgerCache = { seen: { ino, size: bytes.length, mtimeMs: undefined, ctimeMs: undefined }, ledger: next, endsWithNewline: true, lines: 2 }
    }
    return written
  }

  /** Names [start, end) of history for `key` before it is written: one appended line, or the whole ledger anew now and then. */
  const noteAhead = (
    ledger: Ledger.Ledger,
    stat: fs.Stats | undefined,
    inode: number,
    key: string,
    start: number,
    end: number
  ): Result.Result<void, SafeFile.MemoryFileError> => {
    const next = Ledger.record(ledger, inode, key, start, end)
    const cache = ledgerCache
    if (stat === undefined && ledger === Ledger.empty) {
      const made = startLedger(next, Ledger.encodeRecord(inode, key, start, end))
      if (made !== undefined) return made
    }
    if (cache === undefined || stat === undefined || cache.lines > 2 * Ledger.KEEP || ledger.inode !== inode) {
      // Absent, grown long, or about another history file: written whole, through a rename.
      closeHeld(ledgerFd)
      ledgerFd = undefined
      ledgerCache = undefined
      // Read back (and held) at the next append: the rename gave it a new inode.
      return SafeFile.replace(paths.ledger, Ledger.encode(next))
    }
    const held = heldFor(paths.ledger, ledgerFd, stat)
    if (Result.isFailure(held)) {
      ledgerFd = undefined
      return Result.fail(held.failure)
    }
    ledgerFd = { fd: held.success.fd, ino: held.success.ino }
    const size = held.success.stat?.size ?? stat.size
    const bytes = Buffer.from(`${cache.endsWithNewline ? "" : "\n"}${Ledger.encodeRecord(inode, key, start, end)}`, "utf8")
    const written = SafeFile.appendAll(held.success.fd, paths.ledger, bytes, size)
    ledgerCache = Result.isSuccess(written)
      ? {
        seen: { ino: held.success.ino, size: size + bytes.length, mtimeMs: undefined, ctimeMs: undefined },
        ledger: next,
        endsWithNewline: true,
        lines: cache.lines + 1
      }
      : undefined
    return written
  }

  const writeLines = (entries: ReadonlyArray<HistoryEntry>, options: AppendOptions | undefined) =>
  (): Result.Result<void, MemoryError> => {
    const historyStat = look(paths.history)
    if (Result.isFailure(historyStat)) return Result.fail(fromFileError(historyStat.failure))
    const held = heldFor(paths.history, historyFd, historyStat.success)
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
    const current = key === undefined ? Result.succeed(undefined) : currentLedger()
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
      const noted = noteAhead(ledger, current.success?.stat, ino, key, size + prefix.length, size + bytes.length)
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
    const history = historyFd
    const ledgerHeld = ledgerFd
    const cache = ledgerCache
    const end = lastEnd
    if (
      history === undefined || ledgerHeld === undefined || cache === undefined || end === undefined ||
      end.ino !== history.ino || cache.seen.ino !== ledgerHeld.ino || cache.ledger.inode !== history.ino ||
      cache.lines > 2 * Ledger.KEEP || !cache.endsWithNewline ||
      (cache.owned === undefined ? cache.ledger.exchanges.some((entry) => entry.key === key) : cache.owned.keys.has(key))
    ) return Result.succeed(locked)
    const stat = look(paths.history)
    if (Result.isFailure(stat)) return Result.fail(fromFileError(stat.failure))
    if (stat.success === undefined || stat.success.ino !== end.ino || stat.success.size !== end.size) return Result.succeed(locked)
    const size = end.size
    const bytes = Buffer.from(entries.map((entry) => `${encodeEntry(entry)}\n`).join(""), "utf8")
    // Written ahead: names the range before it is filled, so a crash in between is seen.
    const record = Buffer.from(Ledger.encodeRecord(history.ino, key, size, size + bytes.length), "utf8")
    const noted = SafeFile.appendAll(ledgerHeld.fd, paths.ledger, record, cache.seen.size)
    if (Result.isFailure(noted)) {
      ledgerCache = undefined
      return Result.fail(fromFileError(noted.failure))
    }
    let ledger = cache.ledger
    let owned = cache.owned
    if (owned === undefined) {
      // Copied once, then appended in place turn after turn.
      owned = Ledger.own(ledger.exchanges)
      ledger = { inode: ledger.inode, exchanges: owned.exchanges }
    }
    Ledger.recordNewInPlace(owned, key, size, size + bytes.length)
    ledgerCache = {
      seen: { ino: ledgerHeld.ino, size: cache.seen.size + record.length, mtimeMs: undefined, ctimeMs: undefined },
      ledger,
      endsWithNewline: true,
      lines: cache.lines + 1,
      owned
    }
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
    // The old files were just renamed over: their last close frees their
    // blocks (0.5 ms of the thread in a trace), so it goes to the thread pool.
    for (const held of [historyFd, ledgerFd]) if (held !== undefined) fs.close(held.fd, () => undefined)
    historyFd = { fd: history.fd, ino: history.inode }
    ledgerFd = { fd: ledger.fd, ino: ledger.inode }
    lastEnd = { ino: history.inode, size: history.size }
    ledgerCache = {
      seen: { ino: ledger.inode, size: ledger.size, mtimeMs: undefined, ctimeMs: undefined },
      ledger: ledger.value,
      endsWithNewline: true,
      lines: ledger.lines
    }
  }

  const knownLedger = () => {
    const cache = ledgerCache
    if (cache === undefined) return undefined
    const stat = look(paths.ledger)
    return Result.isSuccess(stat) && stat.success !== undefined && unchanged(cache.seen, stat.success) ? cache.ledger : undefined
  }

  const close = () => {
    // Forgotten, not only closed: a later append must not write to a descriptor number reused by another file.
    closeHeld(historyFd)
    historyFd = undefined
    closeHeld(ledgerFd)
    ledgerFd = undefined
  }

  const reset = () => {
    close()
    ledgerCache = undefined
    lastEnd = undefined
  }

  return { writeLines, writeAlone, adopt, knownLedger, close, reset }
}

/** Whether history, `size` bytes long, is empty or ends with a newline: one pread(2). */
const endsWithNewlineAt = (fd: number, size: number): boolean => {
  if (size === 0) return true
  const last = Buffer.allocUnsafe(1)
  return fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a
}
