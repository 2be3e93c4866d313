/**
 * `.history-ledger.json` as an appender holds it (HistoryAppender.ts): its
 * descriptor, open between appends, and the ledger as this process last
 * read or wrote it, trusted while one lstat finds the file as it was left.
 * Each append's range is named ahead in it (Ledger.ts): one appended record,
 * or the whole ledger written anew through a rename now and then.
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import type * as CommitMirror from "./CommitMirror.js"
import { justLeft, look, RACY_MS, type Seen, seenOf, unchanged } from "./FileCache.js"
import * as Ledger from "./Ledger.js"
import * as SafeFile from "../runtime/SafeFile.js"

export interface LedgerFile {
  /** The ledger, read again only when the file is not as this process left it, and its status (undefined: absent). */
  readonly current: () => Result.Result<{ readonly ledger: Ledger.Ledger; readonly stat: fs.Stats | undefined }, SafeFile.MemoryFileError>
  /** Names [start, end) of history `inode` for `key`, on `ledger` as `current` gave it (under the write lock). */
  readonly noteAhead: (
    ledger: Ledger.Ledger,
    stat: fs.Stats | undefined,
    inode: number,
    key: string,
    start: number,
    end: number
  ) => Result.Result<void, SafeFile.MemoryFileError>
  /** Whether `noteAlone` may name a range of history `inode` for `key`: the file held and known as left, short, about that history, without the key. */
  readonly canNoteAlone: (inode: number, key: string) => boolean
  /** After `canNoteAlone`: the record appended, one write(2). */
  readonly noteAlone: (inode: number, key: string, start: number, end: number) => Result.Result<void, SafeFile.MemoryFileError>
  /** The file made empty by this process (O_EXCL) for history `inode`, held and known; false when it could not be made. */
  readonly startEmpty: (inode: number) => boolean
  /** Takes over the ledger a compaction of this process just swapped in. */
  readonly adopt: (committed: CommitMirror.Committed["ledger"]) => void
  /** The ledger as last written or read, when the file is still so (one lstat); else undefined. */
  readonly known: () => Ledger.Ledger | undefined
  /** Closes the held descriptor; the next note opens the file again. */
  readonly close: () => void
  /** `close`, and forgets what it knew of the file. */
  readonly forget: () => void
}

export const make = (file: string): LedgerFile => {
  let held: SafeFile.Held | undefined
  let cache: {
    readonly seen: Seen
    readonly ledger: Ledger.Ledger
    readonly endsWithNewline: boolean
    readonly lines: number
    /** `ledger.exchanges` when this file's appender made the array and no one else holds it: appended in place. */
    readonly owned?: Ledger.OwnedEntries
  } | undefined

  const dropHeld = () => {
    SafeFile.closeHeld(held)
    held = undefined
  }

  type Current = Result.Result<{ readonly ledger: Ledger.Ledger; readonly stat: fs.Stats | undefined }, SafeFile.MemoryFileError>

  const current = (): Current =>
    Result.flatMap(look(file), (stat): Current => {
      if (stat === undefined) {
        cache = undefined
        return Result.succeed({ ledger: Ledger.empty, stat })
      }
      if (cache !== undefined && unchanged(cache.seen, stat)) {
        if (cache.seen.mtimeMs === undefined) cache = { ...cache, seen: seenOf(stat) }
        return Result.succeed({ ledger: cache.ledger, stat })
      }
      // Read through the descriptor the next record is appended by (its lstat just found it: no other).
      // One this process may not write (its mode, a read-only mount) is read alone: a replay it already holds needs no write.
      dropHeld()
      cache = undefined
      const writable = SafeFile.openFound(file, SafeFile.flags.appendExisting)
      const opened = Result.isSuccess(writable) ? writable : SafeFile.openFound(file, SafeFile.flags.read)
      if (Result.isFailure(opened)) return Result.fail(opened.failure)
      if (opened.success === undefined) return Result.succeed({ ledger: Ledger.empty, stat: undefined })
      const { fd, stat: found } = opened.success
      const read = Result.try({ try: () => SafeFile.readUpTo(fd, found.size), catch: (error) => SafeFile.failed(file, error) })
      if (Result.isSuccess(read) && Result.isSuccess(writable)) held = { fd, ino: found.ino }
      else SafeFile.closeHeld(opened.success)
      if (Result.isFailure(read)) return Result.fail(read.failure)
      const text = read.success.toString("utf8")
      const ledger = Ledger.parse(text)
      const seen = seenOf(found)
      cache = {
        // Racily clean: trusted by inode and size only until our next note.
        seen: Date.now() - found.mtimeMs < RACY_MS ? justLeft(seen.ino, seen.size) : seen,
        ledger,
        endsWithNewline: text.length === 0 || text.endsWith("\n"),
        lines: text.split("\n").length
      }
      return Result.succeed({ ledger, stat: found })
    })

  /**
   * No ledger yet (a new agent's first exchange): made by its first record,
   * appended, not written whole through a temporary file (one new inode
   * fewer). A torn line reads as no ledger, as a torn last line is skipped.
   * Undefined when the file was made meanwhile: it is then written whole.
   */
  const startWith = (next: Ledger.Ledger, record: string): Result.Result<void, SafeFile.MemoryFileError> | undefined => {
    dropHeld()
    cache = undefined
    const opened = SafeFile.heldFor(file, undefined, undefined)
    if (Result.isFailure(opened)) return Result.fail(opened.failure)
    const bytes = Buffer.from(record, "utf8")
    const { fd, ino, stat } = opened.success
    const written = (stat?.size ?? 0) === 0 ? SafeFile.appendAll(fd, file, bytes, 0) : undefined
    if (written === undefined || Result.isFailure(written)) SafeFile.closeHeld(opened.success)
    else {
      held = { fd, ino }
      cache = { seen: justLeft(ino, bytes.length), ledger: next, endsWithNewline: true, lines: 2 }
    }
    return written
  }

  const noteAhead: LedgerFile["noteAhead"] = (ledger, stat, inode, key, start, end) => {
    const next = Ledger.record(ledger, inode, key, start, end)
    const known = cache
    if (stat === undefined && ledger === Ledger.empty) {
      const made = startWith(next, Ledger.encodeRecord(inode, key, start, end))
      if (made !== undefined) return made
    }
    if (known === undefined || stat === undefined || known.lines > 2 * Ledger.KEEP || ledger.inode !== inode) {
      // Absent, grown long, or about another history file: written whole, through a rename.
      dropHeld()
      cache = undefined
      // Read back (and held) at the next append: the rename gave it a new inode.
      return SafeFile.replace(file, Ledger.encode(next))
    }
    const opened = SafeFile.heldFor(file, held, stat)
    if (Result.isFailure(opened)) {
      held = undefined
      return Result.fail(opened.failure)
    }
    held = { fd: opened.success.fd, ino: opened.success.ino }
    const size = opened.success.stat?.size ?? stat.size
    const bytes = Buffer.from(`${known.endsWithNewline ? "" : "\n"}${Ledger.encodeRecord(inode, key, start, end)}`, "utf8")
    const written = SafeFile.appendAll(opened.success.fd, file, bytes, size)
    cache = Result.isSuccess(written)
      ? {
        seen: justLeft(opened.success.ino, size + bytes.length),
        ledger: next,
        endsWithNewline: true,
        lines: known.lines + 1
      }
      : undefined
    return written
  }

  const canNoteAlone = (inode: number, key: string): boolean =>
    held !== undefined && cache !== undefined && cache.seen.ino === held.ino && cache.ledger.inode === inode &&
    cache.lines <= 2 * Ledger.KEEP && cache.endsWithNewline &&
    !(cache.owned === undefined ? cache.ledger.exchanges.some((entry) => entry.key === key) : cache.owned.keys.has(key))

  const noteAlone: LedgerFile["noteAlone"] = (inode, key, start, end) => {
    const known = cache!
    const record = Buffer.from(Ledger.encodeRecord(inode, key, start, end), "utf8")
    const noted = SafeFile.appendAll(held!.fd, file, record, known.seen.size)
    if (Result.isFailure(noted)) {
      cache = undefined
      return noted
    }
    let ledger = known.ledger
    let owned = known.owned
    if (owned === undefined) {
      // Copied once, then appended in place turn after turn.
      owned = Ledger.own(ledger.exchanges)
      ledger = { inode: ledger.inode, exchanges: owned.exchanges }
    }
    Ledger.recordNewInPlace(owned, key, start, end)
    cache = {
      seen: justLeft(known.seen.ino, known.seen.size + record.length),
      ledger,
      endsWithNewline: true,
      lines: known.lines + 1,
      owned
    }
    return noted
  }

  const startEmpty = (inode: number): boolean => {
    const made = SafeFile.openWithStat(file, SafeFile.flags.createNewAppendable)
    if (Result.isFailure(made)) return false
    dropHeld()
    held = { fd: made.success.fd, ino: made.success.stat.ino }
    cache = {
      seen: justLeft(made.success.stat.ino, 0),
      ledger: { inode, exchanges: [] },
      endsWithNewline: true,
      lines: 1
    }
    return true
  }

  const adopt = (committed: CommitMirror.Committed["ledger"]) => {
    // The old file was just renamed over: its last close frees its blocks, so it goes to the thread pool.
    if (held !== undefined) fs.close(held.fd, () => undefined)
    held = { fd: committed.fd, ino: committed.inode }
    cache = {
      seen: justLeft(committed.inode, committed.size),
      ledger: committed.value,
      endsWithNewline: true,
      lines: committed.lines
    }
  }

  const known = () => {
    const last = cache
    if (last === undefined) return undefined
    const stat = look(file)
    return Result.isSuccess(stat) && stat.success !== undefined && unchanged(last.seen, stat.success) ? last.ledger : undefined
  }

  const forget = () => {
    dropHeld()
    cache = undefined
  }

  return { current, noteAhead, canNoteAlone, noteAlone, startEmpty, adopt, known, close: dropHeld, forget }
}
