/**
 * The inbox journal's one descriptor for the run (O_APPEND, checked once
 * when opened): each record is one write(2), emptying is one ftruncate(2).
 * The run lock (MemoryHold.ts: a run's, or a started agent's in serve)
 * makes this process the journal's only writer, so its size is known here,
 * for cutting back a write that did not land whole.
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

/** `opened`: the descriptor the journal's read left open at its end; absent, the first record makes the file. */
export const make = (file: string, opened: { readonly fd: number; readonly size: number } | undefined): InboxJournalFile => {
  let journal: { readonly fd: number; size: number } | undefined = opened === undefined
    ? undefined
    : { fd: opened.fd, size: opened.size }
  const held = (): Result.Result<{ readonly fd: number; size: number }, SafeFile.MemoryFileError> => {
    if (journal !== undefined) return Result.succeed(journal)
    return Result.map(SafeFile.openWithStat(file, SafeFile.flags.append), ({ fd, stat }) => {
      journal = { fd, size: stat.size }
      return journal
    })
  }
  const drop = () => {
    SafeFile.closeHeld(journal)
    journal = undefined
  }
  const append = (...records: ReadonlyArray<object>): Result.Result<void, SafeFile.MemoryFileError> =>
    Result.flatMap(held(), (target) => {
      const text = records.map((record) => `${JSON.stringify(record)}\n`).join("")
      const bytes = Buffer.from(text, "utf8")
      const written = SafeFile.appendAll(target.fd, file, bytes, target.size)
      if (Result.isSuccess(written)) target.size += bytes.length
      else drop()
      return written
    })
  const truncate = (): Result.Result<void, SafeFile.MemoryFileError> =>
    Result.flatMap(held(), (target) => {
      const cut = Result.try({ try: () => fs.ftruncateSync(target.fd, 0), catch: (error) => SafeFile.failed(file, error) })
      if (Result.isSuccess(cut)) target.size = 0
      else drop()
      return cut
    })
  return { append, truncate, drop }
}
