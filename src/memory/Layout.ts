/**
 * The files of the memory directory and the commits that change them
 * together: a compaction swaps new files in (written beside the old ones),
 * a forget moves the files into an archive (Forget.ts). Either way the
 * journal file's appearance is the commit point, and `recover` finishes or
 * discards a commit a crash interrupted. An empty journal is a compaction;
 * one naming an archive is a forget.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Result from "effect/Result"
import * as SafeFile from "../runtime/SafeFile.js"

/**
 * The directory as path.join would start each of its files' paths. One
 * path.join, then a concatenation per file: path.join builds each path
 * character by character (about 0.75 KiB of garbage a call, twelve here at
 * every agent's start). Exact for names of one segment, as these are.
 */
const prefixOf = (directory: string): string => path.join(directory, "x").slice(0, -1)

export const files = (directory: string) => {
  const prefix = prefixOf(directory)
  return {
    soul: `${prefix}soul.md`,
    summary: `${prefix}summary.md`,
    history: `${prefix}history.jsonl`,
    ledger: `${prefix}.history-ledger.json`,
    inbox: `${prefix}.inbox.jsonl`,
    /** Replies a run over the FIFOs left unread in interact_out, sent first by the next (FifoInteract). */
    unreadReplies: `${prefix}.interact-out.unread`,
    writeLock: `${prefix}.planckclaw-write.lock`,
    compactionLock: `${prefix}.planckclaw-compact.lock`,
    journal: `${prefix}.compaction-commit`,
    nextSummary: `${prefix}.summary.md.next`,
    nextHistory: `${prefix}.history.jsonl.next`,
    nextLedger: `${prefix}.history-ledger.json.next`
  }
}

export type Paths = ReturnType<typeof files>

/** The files the agent writes: each must be a regular file of this user, never a link. */
export const written = (paths: Paths): ReadonlyArray<string> => [paths.history, paths.summary, paths.ledger, paths.inbox]

/**
 * [next file, the file it replaces] for each file a compaction commit swaps,
 * in the order they are renamed: summary before history. The turn's
 * snapshot cache (Memory.ts) relies on that order to trust an unchanged
 * summary and history without the lock.
 */
const swaps = (paths: Paths) =>
  [[paths.nextSummary, paths.summary], [paths.nextHistory, paths.history], [paths.nextLedger, paths.ledger]] as const

const renameIfPresent = (from: string, to: string) => {
  if (fs.existsSync(from)) fs.renameSync(from, to)
}

/** Where a forget moves the memory: the archive's directory, relative to the memory directory. */
export const ARCHIVE_DIR = "archive"
const archiveName = /^archive\/[A-Za-z0-9._-]+$/

/** The journal of a forget commit: the archive it moves the files into. */
export const forgetJournal = (archive: string): string => `${JSON.stringify({ forget: archive })}\n`

/**
 * The files a forget moves into its archive, summary first like a
 * compaction's swap (a lock-free reader trusting an unchanged summary then
 * an unchanged history sees both as one pair).
 */
export const forgotten = (paths: Paths) => [paths.summary, paths.ledger, paths.history] as const

/** The archive a journal names, when it is a forget's (a compaction's journal is empty). */
const forgetTarget = (paths: Paths): string | undefined => {
  const text = Result.getOrElse(Result.try(() => fs.readFileSync(paths.journal, "utf8")), () => "")
  if (text.trim().length === 0) return undefined
  const parsed = Result.getOrUndefined(Result.try(() => JSON.parse(text) as unknown))
  const archive = typeof parsed === "object" && parsed !== null ? (parsed as { readonly forget?: unknown }).forget : undefined
  return typeof archive === "string" && archiveName.test(archive) ? archive : undefined
}

/** Moves what is left of the forgotten files into the archive (rename: never a copy, never a mix). */
const finishForget = (paths: Paths, archive: string) => {
  const target = path.join(path.dirname(paths.history), archive)
  makeDirectories(target)
  for (const file of forgotten(paths)) renameIfPresent(file, path.join(target, path.basename(file)))
  // A compaction's leftovers must not be swapped in after a forget.
  for (const [next] of swaps(paths)) {
    if (fs.existsSync(next)) fs.unlinkSync(next)
  }
}

/**
 * Finishes or discards a compaction commit interrupted by a crash. With the
 * journal present the new files are complete and are moved into place
 * (rename replaces a link, never follows it); without it they may be
 * partial and are removed.
 */
export const recover = (paths: Paths) => {
  if (fs.existsSync(paths.journal)) {
    const archive = forgetTarget(paths)
    if (archive !== undefined) finishForget(paths, archive)
    else for (const [next, current] of swaps(paths)) renameIfPresent(next, current)
    fs.unlinkSync(paths.journal)
  } else {
    for (const [next] of swaps(paths)) {
      if (fs.existsSync(next)) fs.unlinkSync(next)
    }
  }
}

/**
 * `recover` for a compaction commit of this process, right after its
 * journal appeared, with its three next files in place: the renames and the
 * journal's removal, without looking first. A failure midway leaves the
 * journal, and the next `recover` finishes the swap.
 */
export const swapIn = (paths: Paths) => {
  for (const [next, current] of swaps(paths)) fs.renameSync(next, current)
  fs.unlinkSync(paths.journal)
}

/**
 * `recover` for the usual case, one access(2): only the journal (the commit
 * point) says a commit must be finished. `.next` files without it are the
 * leftovers of a compaction that died holding the write lock; they are
 * harmless to readers (`readable` picks them only with the journal),
 * `writeNew` replaces them, and they are cleared by the full `recover` that
 * follows taking over a dead owner's lock (MemoryDir.ts).
 */
export const finishCommit = (paths: Paths) => {
  if (fs.existsSync(paths.journal)) recover(paths)
}

/**
 * The files a reader that cannot take the lock (a full disk) should read:
 * with a commit under way, the new ones, which are complete.
 */
export const readable = (paths: Paths) => {
  const committing = fs.existsSync(paths.journal)
  const pick = (next: string, current: string) => committing && fs.existsSync(next) ? next : current
  return { summary: pick(paths.nextSummary, paths.summary), history: pick(paths.nextHistory, paths.history) }
}

/** Writes a new file whole and durably (a leftover of the same name goes first); returns its inode. */
export const writeNew = (file: string, data: string | Buffer): Result.Result<number, SafeFile.MemoryFileError> => {
  SafeFile.removeLeftover(file)
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data
  const result = SafeFile.withFile(file, SafeFile.flags.createNew, (fd) =>
    Result.flatMap(SafeFile.appendAll(fd, file, bytes, 0), () =>
      Result.try({
        try: () => {
          fs.fsyncSync(fd)
          return fs.fstatSync(fd).ino
        },
        catch: (error) => SafeFile.failed(file, error)
      })))
  // A partial file must not hold the space a full disk needs back.
  if (Result.isFailure(result)) Result.try(() => fs.unlinkSync(file))
  return result
}

export const syncDirectory = (directory: string) => {
  const fd = fs.openSync(directory, "r")
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * mkdir -p, one level at a time. Node's recursive mkdir spins forever where
 * mkdir(2) answers ENOENT under an existing parent (procfs, sysfs).
 */
export const makeDirectories = (directory: string) => {
  const missing: Array<string> = []
  for (let dir = directory; !fs.existsSync(dir); dir = path.dirname(dir)) missing.unshift(dir)
  for (const dir of missing) fs.mkdirSync(dir, { mode: 0o700 })
}
