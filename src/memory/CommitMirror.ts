/**
 * A compaction commit that does not stop the turns of a `planckclaw run`.
 *
 * The commit writes the next history and ledger beside the old ones and
 * syncs them; the journal's appearance is its commit point, then the files
 * are renamed into place (Layout.ts). A run is its directory's only
 * appender, so instead of holding every append back across those waits
 * (six fsyncs, a few milliseconds to tens), its appends go on into the old
 * files and are copied, in the same synchronous step, to the ends of the
 * next ones. So whenever the journal exists, the next files hold every
 * exchange an append has reported stored, and recovery may swap them in;
 * without the journal they are discarded and the old files hold it all.
 *
 * The next history is staged first and the mirror installed with it; the
 * next ledger a step later, made from the old ledger, which by then names
 * the ranges of the appends copied meanwhile: until it is staged only
 * history is copied. After the swap a run's history store may take both
 * files over, open, as they are (`committed`).
 *
 * A copy that cannot be made (a full disk) removes the journal, if it is
 * already there, before the append returns: the commit is then abandoned
 * (the old files are whole) and the fold is tried again later.
 *
 * The copied bytes are not fsynced, like every append of history and its
 * ledger: they are as durable in the next files as in the old ones.
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import * as Ledger from "./Ledger.js"
import * as SafeFile from "../runtime/SafeFile.js"

export interface CommitMirror {
  /** The history the appends go to, and where the fold split it. */
  readonly oldInode: number
  readonly split: number
  /** The next history, open for reading and appending. */
  readonly history: { readonly fd: number; readonly file: string; readonly inode: number }
  /**
   * The next ledger, open for reading and appending, as written; undefined
   * until it is staged (made from the old ledger then, which names every
   * range appended before: only history needs copying until then).
   */
  ledger: NextLedger | undefined
  /** The journal path: removed when a copy fails. */
  readonly journal: string
  /** Bytes in the next history (the old history's bytes from `split` on, copied so far). */
  historyEnd: number
  /** Bytes in the next ledger. */
  ledgerEnd: number
  /** Lines copied so far. */
  copiedLines: number
  /** The next history ends with a newline (or is empty): an append needs no separator. */
  endsWithNewline: boolean
  /** A copy failed: the commit must not complete. */
  failed: boolean
  /** The run's history store took the descriptors over after the swap (MemoryDir.adoptCommits): not closed here. */
  adopted: boolean
}

export interface NextLedger {
  readonly fd: number
  readonly file: string
  readonly inode: number
  /** What it holds: the ledger after the fold, then a record per copy. */
  value: Ledger.Ledger
  /** Its lines as `text.split("\n")` counts them (the appender's measure of when to write it whole). */
  lines: number
}

/** A mirror of the next history open as `history`, which holds `historyEnd` bytes; its ledger comes later (`ledgerStaged`). */
export const make = (
  options: Omit<CommitMirror, "copiedLines" | "failed" | "adopted" | "ledger" | "ledgerEnd">
): CommitMirror => ({
  ...options,
  ledger: undefined,
  ledgerEnd: 0,
  copiedLines: 0,
  failed: false,
  adopted: false
})

/** The next ledger, staged with `bytes` bytes holding `value`: records of later appends are copied into it. */
export const ledgerStaged = (
  mirror: CommitMirror,
  staged: { readonly fd: number; readonly file: string; readonly ino: number },
  value: Ledger.Ledger,
  bytes: number
): void => {
  mirror.ledger = { fd: staged.fd, file: staged.file, inode: staged.ino, value, lines: 2 }
  mirror.ledgerEnd = bytes
}

/** A run's history store, as its compaction's commit alongside its appends uses it (MemoryDir.adoptCommits). */
export interface Adopter {
  /** The ledger as the store last wrote it, when the file is still as it left it (one lstat); else undefined. */
  readonly ledger: () => Ledger.Ledger | undefined
  /** Takes the next files over, in the swap's step. */
  readonly take: (committed: Committed) => void
}

/** What a run's history store takes over after the swap (MemoryDir.adoptCommits). */
export interface Committed {
  /** The history the appends went to until the swap, and its size then. */
  readonly oldHistory: { readonly inode: number; readonly size: number }
  readonly history: { readonly fd: number; readonly inode: number; readonly size: number; readonly lines: number }
  readonly ledger: {
    readonly fd: number
    readonly inode: number
    readonly size: number
    readonly value: Ledger.Ledger
    readonly lines: number
  }
  /** summary.md as written. */
  readonly summary: string
}

/**
 * The swapped mirror's files as they are, holding `lines` lines of history;
 * none when they cannot be appended to as they are (a ledger never staged,
 * a kept tail without its final newline).
 */
export const committed = (mirror: CommitMirror, lines: number, summary: string): Committed | undefined => {
  const ledger = mirror.ledger
  if (ledger === undefined || mirror.failed || !mirror.endsWithNewline) return undefined
  return {
    oldHistory: { inode: mirror.oldInode, size: mirror.split + mirror.historyEnd },
    history: { fd: mirror.history.fd, inode: mirror.history.inode, size: mirror.historyEnd, lines },
    ledger: { fd: ledger.fd, inode: ledger.inode, size: mirror.ledgerEnd, value: ledger.value, lines: ledger.lines },
    summary
  }
}

/** Closes the next files' descriptors (once no append can reach them: MemoryDir ends the mirror under its mutex). */
export const close = (mirror: CommitMirror): void => {
  if (mirror.adopted) return
  Result.try(() => fs.closeSync(mirror.history.fd))
  if (mirror.ledger !== undefined) Result.try(() => fs.closeSync(mirror.ledger!.fd))
}

const abandon = (mirror: CommitMirror): void => {
  mirror.failed = true
  // Before the append returns: a crash from here on must not swap in next files that miss it.
  Result.try(() => fs.unlinkSync(mirror.journal))
}

/**
 * Copies an append that just landed at [start, start + bytes.length) of the
 * old history (inode `inode`), with the ledger range it named for `key`
 * (undefined: none), to the next files. Anything but the contiguous append
 * the commit expects abandons the commit.
 */
export const copyAppend = (
  mirror: CommitMirror,
  inode: number,
  start: number,
  bytes: Buffer,
  noted: { readonly key: string; readonly start: number; readonly end: number } | undefined
): void => {
  if (mirror.failed) return
  if (inode !== mirror.oldInode || start - mirror.split !== mirror.historyEnd) return abandon(mirror)
  const ledger = mirror.ledger
  if (noted !== undefined && ledger !== undefined) {
    const start = noted.start - mirror.split
    const end = noted.end - mirror.split
    const record = Buffer.from(Ledger.encodeRecord(mirror.history.inode, noted.key, start, end), "utf8")
    // Ledger first, as for the old files: the range is named before it is filled.
    if (Result.isFailure(SafeFile.appendAll(ledger.fd, ledger.file, record, mirror.ledgerEnd))) return abandon(mirror)
    mirror.ledgerEnd += record.length
    ledger.value = Ledger.record(ledger.value, mirror.history.inode, noted.key, start, end)
    ledger.lines++
  }
  if (Result.isFailure(SafeFile.appendAll(mirror.history.fd, mirror.history.file, bytes, mirror.historyEnd))) return abandon(mirror)
  mirror.historyEnd += bytes.length
  if (bytes.length > 0) mirror.endsWithNewline = bytes[bytes.length - 1] === 0x0a
  for (const byte of bytes) if (byte === 0x0a) mirror.copiedLines++
}

/** An append the mirror cannot follow (a ledger written whole, a line not at the end): the commit is abandoned. */
export const cannotCopy = (mirror: CommitMirror): void => {
  if (!mirror.failed) abandon(mirror)
}
