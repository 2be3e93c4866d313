/**
 * The inbox journal's one descriptor for the run (O_APPEND, checked once
 * when opened): each record is one write(2), emptying is one ftruncate(2).
 * The run lock (MemoryHold.ts: a run's, or a started agent's in serve)
 * makes this process the journal's only writer, so its size is known here,
 * for cutting back a write that did not land whole.
 *
 * Each record first looks (one fstat of the descriptor: a few times
 * cheaper than an lstat of the path, on every turn) whether the file held
 * is still linked and as long: a journal removed or replaced while the
 * agent runs (the memory directory deleted by hand, and made again by the
 * next append to history) has no link left, and would otherwise take every
 * later record into an unlinked file, lost at the next crash. A journal
 * opened on another file than the one last written starts with the records
 * of the messages still pending (`pending`).
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import * as SafeFile from "../runtime/SafeFile.js"

export interface InboxJournalFile {
  /** The records, one JSON line each, in one write; the file cut back if it did not land whole. */
  readonly append: (...records: ReadonlyArray<object>) => Result.Result<void, SafeFile.MemoryFileError>
  /** Empties the journal (needs no free space). */
  readonly truncate: () => Result.Result<void, SafeFile.MemoryFileError>
  /** Closes the descriptor: after a failure, the next record opens (and checks) the file again. */
  readonly drop: () => void
}

/** What a journal on a new file must hold first, and what to do once it does. */
export interface Pending {
  /** The records of every message still pending, as a replay would need them. */
  readonly records: () => ReadonlyArray<object>
  /** They landed in the new file. */
  readonly kept: () => void
}

/** `opened`: the descriptor the journal's read left open at its end; absent, the first record makes the file. */
export const make = (
  file: string,
  opened: { readonly fd: number; readonly size: number; readonly ino: number } | undefined,
  pending: Pending
): InboxJournalFile => {
  let journal: { readonly fd: number; size: number; readonly ino: number } | undefined = opened === undefined
    ? undefined
    : { fd: opened.fd, size: opened.size, ino: opened.ino }
  // The file as the records last left it: a journal opened on another (or found shorter) starts with what is pending.
  let last: { readonly ino: number; readonly size: number } | undefined = opened === undefined ? undefined : { ino: opened.ino, size: opened.size }
  const drop = () => {
    SafeFile.closeHeld(journal)
    journal = undefined
  }
  /** The path as it is now; undefined when absent, or when it cannot be looked at (the open then says why). */
  const lookNow = () => Result.getOrUndefined(Result.try(() => fs.lstatSync(file, { throwIfNoEntry: false })))
  /** The held file's size when it is still linked and holds at least what it held; undefined when it is not (or cannot say). */
  const stillHeld = (held: { readonly fd: number; readonly size: number }) => {
    const now = Result.getOrUndefined(Result.try(() => fs.fstatSync(held.fd)))
    return now !== undefined && now.nlink > 0 && now.size >= held.size ? now.size : undefined
  }
  const held = (): Result.Result<{ readonly fd: number; readonly size: number; readonly fresh: boolean }, SafeFile.MemoryFileError> => {
    if (journal !== undefined) {
      // Grown, it holds what it held (a serve agent's instance closing while its successor starts appends too).
      const size = stillHeld(journal)
      if (size !== undefined) {
        journal.size = size
        return Result.succeed({ ...journal, fresh: false })
      }
      // Removed, replaced or cut by hand: what it held is gone, even should a new file get the same inode.
      last = undefined
      drop()
    }
    return Result.map(SafeFile.openWithStat(file, SafeFile.flags.append), ({ fd, stat }) => {
      journal = { fd, size: stat.size, ino: stat.ino }
      return { ...journal, fresh: last === undefined || last.ino !== stat.ino || stat.size < last.size }
    })
  }
  const append = (...records: ReadonlyArray<object>): Result.Result<void, SafeFile.MemoryFileError> =>
    Result.flatMap(held(), (target) => {
      const first = target.fresh ? pending.records() : []
      const text = [...first, ...records].map((record) => `${JSON.stringify(record)}\n`).join("")
      const bytes = Buffer.from(text, "utf8")
      const written = SafeFile.appendAll(target.fd, file, bytes, target.size)
      if (Result.isFailure(written)) {
        drop()
        return written
      }
      journal!.size = target.size + bytes.length
      last = { ino: journal!.ino, size: journal!.size }
      if (first.length > 0) pending.kept()
      return written
    })
  const cut = (target: { readonly fd: number }): Result.Result<void, SafeFile.MemoryFileError> => {
    const cutDone = Result.try({ try: () => fs.ftruncateSync(target.fd, 0), catch: (error) => SafeFile.failed(file, error) })
    if (Result.isFailure(cutDone)) {
      drop()
      return cutDone
    }
    journal!.size = 0
    last = { ino: journal!.ino, size: 0 }
    return cutDone
  }
  const truncate = (): Result.Result<void, SafeFile.MemoryFileError> => {
    // Nothing is pending when the journal is emptied: a journal gone (no file, or the one held unlinked) is as good as
    // an empty one.
    const gone = journal === undefined ? lookNow() === undefined : stillHeld({ fd: journal.fd, size: 0 }) === undefined
    if (gone) {
      drop()
      last = undefined
      return Result.succeed(undefined)
    }
    return journal === undefined ? Result.flatMap(held(), cut) : cut(journal)
  }
  return { append, truncate, drop }
}
