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
 * A copy that cannot be made (a full disk) removes the journal, if it is
 * already there, before the append returns: the commit is then abandoned
 * (the old files are whole) and the fold is tried again later.
 *
 * The copied bytes are not fsynced, like every append of history and its
 * ledger: they are as durable in the next files as in the old ones.
 */
import * as fs from "node:fs"
import * as Either from "effect/Either"
import * as Ledger from "./Ledger.js"
import * as SafeFile from "./SafeFile.js"

export interface CommitMirror {
  /** The history the appends go to, and where the fold split it. */
  readonly oldInode: number
  readonly split: number
  /** The next history and ledger, open for writing. */
  readonly history: { readonly fd: number; readonly file: string; readonly inode: number }
  readonly ledger: { readonly fd: number; readonly file: string }
  /** The journal path: removed when a copy fails. */
  readonly journal: string
  /** Bytes in the next history (the old history's bytes from `split` on, copied so far). */
  historyEnd: number
  /** Bytes in the next ledger. */
  ledgerEnd: number
  /** Lines copied so far. */
  copiedLines: number
  /** A copy failed: the commit must not complete. */
  failed: boolean
}

/** A mirror of the next files open as `history` and `ledger`, which hold `historyEnd` and `ledgerEnd` bytes. */
export const make = (options: Omit<CommitMirror, "copiedLines" | "failed">): CommitMirror => ({
  ...options,
  copiedLines: 0,
  failed: false
})

/** Closes the next files' descriptors (once no append can reach them: MemoryDir ends the mirror under its mutex). */
export const close = (mirror: CommitMirror): void => {
  Either.try(() => fs.closeSync(mirror.history.fd))
  Either.try(() => fs.closeSync(mirror.ledger.fd))
}

const abandon = (mirror: CommitMirror): void => {
  mirror.failed = true
  // Before the append returns: a crash from here on must not swap in next files that miss it.
  Either.try(() => fs.unlinkSync(mirror.journal))
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
  if (noted !== undefined) {
    const record = Buffer.from(
      Ledger.encodeRecord(mirror.history.inode, noted.key, noted.start - mirror.split, noted.end - mirror.split),
      "utf8"
    )
    // Ledger first, as for the old files: the range is named before it is filled.
    if (Either.isLeft(SafeFile.appendAll(mirror.ledger.fd, mirror.ledger.file, record, mirror.ledgerEnd))) return abandon(mirror)
    mirror.ledgerEnd += record.length
  }
  if (Either.isLeft(SafeFile.appendAll(mirror.history.fd, mirror.history.file, bytes, mirror.historyEnd))) return abandon(mirror)
  mirror.historyEnd += bytes.length
  for (const byte of bytes) if (byte === 0x0a) mirror.copiedLines++
}

/** An append the mirror cannot follow (a ledger written whole, a line not at the end): the commit is abandoned. */
export const cannotCopy = (mirror: CommitMirror): void => {
  if (!mirror.failed) abandon(mirror)
}
