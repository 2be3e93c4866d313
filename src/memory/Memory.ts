/**
 * The agent's memory on disk, in the original's format: soul.md (persona),
 * summary.md (written only by compaction) and history.jsonl (one
 * {"role","content"} per line). This is the history store a turn uses:
 * read the persona, summary and recent history, append an exchange, and
 * tell whether compaction is due. Every write of history happens under the
 * directory's cross-process lock (MemoryDir.ts), so `planckclaw compact` in
 * another process never races a turn; the compaction's side of the store is
 * FoldStore.ts. Memory files are opened without following links and only if
 * they are regular files of this user. A write that cannot land whole (a
 * full disk) is cut back and reported once; reading never needs a new file,
 * so turns are answered on a full disk.
 *
 * Assembled here from its parts: the cached snapshot reader
 * (SnapshotReader.ts), the held-descriptor append path with its ledger
 * (HistoryAppender.ts), and the line count that tells when to compact.
 */
import * as fs from "node:fs"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Forget from "./Forget.js"
import * as HistoryAppender from "./HistoryAppender.js"
import type { AppendOptions } from "./HistoryAppender.js"
import {
  encodeEntry,
  endsWithNewline,
  extendCount,
  type HistoryEntry,
  type LineCount,
  parseLine,
  scanTail
} from "./HistoryFile.js"
import * as Layout from "./Layout.js"
import * as MemoryDir from "./MemoryDir.js"
import { ensureWritable } from "./EnsureWritable.js"
import { MemoryConfig, type MemoryError, withHistory } from "./MemoryDir.js"
import * as SafeFile from "../runtime/SafeFile.js"
import * as SnapshotReader from "./SnapshotReader.js"
import type { MemorySnapshot, SnapshotReaderOptions } from "./SnapshotReader.js"

export type { AppendOptions } from "./HistoryAppender.js"
export type { HistoryEntry } from "./HistoryFile.js"
export { ensureWritable } from "./EnsureWritable.js"
export { CompactionBusy, MemoryConfig, MemoryError } from "./MemoryDir.js"
export { DEFAULT_SOUL, type MemorySnapshot } from "./SnapshotReader.js"

export interface MemoryOptions {
  /**
   * The persona when the directory has no soul.md (or an empty one), before
   * DEFAULT_SOUL: a host's default soul for its agents. Validated by lstat
   * at each snapshot like soul.md, so an edit applies to the next turn.
   */
  readonly fallbackSoulFile?: string | undefined
  /** That file's reader shared by a host's agents (FallbackSoul.reader), so its text is kept once. */
  readonly fallbackSoul?: SnapshotReaderOptions["fallbackSoul"]
  /** This process's owner file for the directory's locks (OwnerFile.ts): they are then hard links to it. */
  readonly ownerFile?: string | undefined
  /**
   * The directory was made just now by this process: nothing of an
   * interrupted commit to look for (MemoryDir), no summary or history for
   * the first snapshot to read under the lock (SnapshotReader), and the
   * first append makes history and ledger itself (HistoryAppender).
   */
  readonly fresh?: boolean | undefined
}

/** Up to this size, a history file met for the first time by an append is counted then, in one read. */
const COUNT_ON_APPEND_BYTES = 1024 * 1024

/** A history line decoded, or none when it is not exactly {"role","content"}. */
export const decodeLine: (line: string) => Option.Option<HistoryEntry> = parseLine

/** A history line as the original agent writes it (without its newline). */
export const encodeLine: (entry: HistoryEntry) => string = encodeEntry

export interface MemoryService {
  readonly directory: string
  /** The directory with its write lock, shared with the compaction's FoldStore so both take turns. */
  readonly memoryDir: MemoryDir.MemoryDir
  readonly snapshot: (keep: number) => Effect.Effect<MemorySnapshot, MemoryError>
  /** Appends lines to history: all of them, or nothing. */
  readonly append: (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) => Effect.Effect<void, MemoryError>
  /** Whether the last write to memory failed (a full disk): compaction waits until one succeeds. */
  readonly storageFailing: Effect.Effect<boolean>
  readonly hasMoreLinesThan: (limit: number) => Effect.Effect<boolean, MemoryError>
  /** What `forget` would archive now. */
  readonly forgetPreview: Effect.Effect<Forget.ForgetPreview, MemoryError>
  /**
   * Moves history, summary and ledger into `archive/<stamp>/` (Forget.ts)
   * under the write lock, and drops every cache and descriptor of them, so
   * the next snapshot is empty and the next append starts a new file.
   * None when there was nothing to forget.
   */
  readonly forget: (stamp: string) => Effect.Effect<Option.Option<Forget.Forgotten>, MemoryError>
  /** Closes the descriptors held between appends; the next append opens them again (a host with many idle agents). */
  readonly closeFiles: Effect.Effect<void>
}

export class Memory extends Context.Service<Memory, MemoryService>()("planckclaw/Memory") {}

/** The store, and how to close the descriptors it holds. */
const open = (memoryDir: MemoryDir.MemoryDir, options: MemoryOptions): Effect.Effect<{ readonly service: MemoryService; readonly close: () => void }> =>
  Effect.sync(() => {
    const { directory, locked, lockedRead, paths, storeFailed, storeWorked } = memoryDir
    const reader = SnapshotReader.make(memoryDir, options)
    // The line count of history as last seen, so the per-turn "is it time to
    // compact?" question costs the bytes appended since, not the file size.
    let known: LineCount | undefined
    // Set by an append that left `known` current, under the lock: the next
    // question is answered from it without a stat (a compaction or append by
    // another process in between is seen at the question after).
    let appended = false

    const appender = HistoryAppender.make(paths, (fd, ino, size, end, entries) => {
      // Our own append keeps the count current: the next check needs no lock,
      // unless a commit is about to replace this file (then the next check stats it).
      const current = memoryDir.mirror?.() === undefined
      if (known !== undefined && known.inode === ino && known.size === size) {
        // The lines just written, counted from what was written, not read back.
        known = { inode: ino, size: end, lines: known.lines + entries.length, endsWithNewline: true }
        appended = current
      } else if (size === 0) {
        // A file empty until now (a new agent's first append): its lines are
        // those just written, one per entry, not read back. The next check
        // still stats it, as for any file not counted before.
        known = { inode: ino, size: end, lines: entries.length, endsWithNewline: true }
        appended = false
      } else if (known !== undefined && known.inode === ino && known.size < size) {
        known = extendCount(fd, known, end)
        appended = current
      } else if (end <= COUNT_ON_APPEND_BYTES) {
        // Another file than the one counted (a compaction just replaced it,
        // or none counted yet) and a small one: counted whole now, from the
        // descriptor in hand (one pread), not at the next check under the
        // lock. That check still stats the file (a writer we never saw may
        // have appended meanwhile): one statx instead of a locked count.
        known = extendCount(fd, { inode: ino, size: 0, lines: 0, endsWithNewline: true }, end)
        appended = false
      } else {
        // Another file than the one counted, and a large one: counted again at the next check.
        appended = false
      }
      // And the snapshot's tail, when it was history as found here.
      reader.appended(ino, size, end, entries)
    }, () => memoryDir.mirror?.(), { fresh: options.fresh })

    // This process's compaction swapped new files in alongside its appends:
    // taken as they are, so the next turn neither reads them nor appends under the lock.
    memoryDir.adoptCommits?.({
      ledger: appender.knownLedger,
      take: (committed) => {
        appender.adopt(committed)
        reader.committed(committed.oldHistory, committed.history, committed.summary)
        const { inode, lines, size } = committed.history
        known = { inode, size, lines, endsWithNewline: true }
        appended = false
      }
    })

    // Under the lock after a compaction of another process may have missed
    // our write: nothing cached is trusted, and the ledger says whether the
    // exchange landed in history as it is now (else it is written again).
    const rewrite = (entries: ReadonlyArray<HistoryEntry>, options: AppendOptions | undefined) => () => {
      appender.reset()
      reader.reset()
      known = undefined
      appended = false
      return appender.writeLines(entries, options)()
    }

    const append = (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) => {
      const key = options?.exchange
      const write = key === undefined || memoryDir.appendAlone === undefined
        ? locked("appending to history.jsonl", appender.writeLines(entries, options))
        : memoryDir.appendAlone(
          "appending to history.jsonl",
          () => appender.writeAlone(entries, key),
          appender.writeLines(entries, options),
          rewrite(entries, options),
          appender.stillLinked
        )
      // The write's value is void: storeWorked's takes its place without a step to restore it.
      const written: Effect.Effect<void, MemoryError> = write
      return Effect.catch(Effect.andThen(written, storeWorked), storeFailed)
    }

    // Unchanged since the last count (our own appends keep it current): one
    // stat and no lock. Anything else (another process appended, compacted or
    // replaced the file) is counted under the lock.
    const hasMoreLinesThan = (limit: number) =>
      Effect.suspend(() => {
        if (appended && known !== undefined) {
          appended = false
          return Effect.succeed(known.lines > limit)
        }
        const stat = Result.try(() => fs.statSync(paths.history, { throwIfNoEntry: false }))
        return Result.isSuccess(stat) && stat.success !== undefined && known !== undefined &&
            known.inode === stat.success.ino && known.size === stat.success.size
          ? Effect.succeed(known.lines > limit)
          : countLines(limit)
      })

    const count = (limit: number, file: string) => () =>
      withHistory(file, SafeFile.flags.read, false, (fd, stat) => {
        if (known !== undefined && known.inode === stat.ino && known.size <= stat.size) {
          known = extendCount(fd, known, stat.size)
          return Result.succeed(known.lines > limit)
        }
        // Unknown or rewritten file: scan back at most limit + 1 lines; reaching
        // the start means the count is exact and worth keeping.
        const tail = scanTail(fd, limit + 1, stat.size)
        if (tail.count > limit) return Result.succeed(true)
        known = { inode: stat.ino, size: stat.size, lines: tail.count, endsWithNewline: endsWithNewline(fd, stat.size) }
        return Result.succeed(false)
      })

    const countLines = (limit: number) =>
      // The fallback's files (an access of the commit journal) only when the lock cannot be taken.
      lockedRead("counting history lines", count(limit, paths.history), () => count(limit, Layout.readable(paths).history)())

    const forget = (stamp: string) =>
      locked("forgetting memory", () => {
        // Whatever happened (a failure may have moved some files), nothing cached of the old files is trusted.
        const forgotten = Forget.commit(directory, paths, stamp)
        appender.reset()
        reader.reset()
        known = undefined
        appended = false
        return forgotten
      }).pipe(Effect.tap(() => storeWorked))

    const service: MemoryService = {
      directory,
      memoryDir,
      snapshot: reader.snapshot,
      append,
      storageFailing: memoryDir.storageFailing,
      hasMoreLinesThan,
      forgetPreview: Effect.sync(() => Forget.preview(paths)),
      forget,
      closeFiles: Effect.sync(appender.close)
    }
    return { service, close: appender.close }
  })

/**
 * The history store on a memory directory; FoldStore.make on the same
 * `memoryDir` shares its lock. Its held descriptors (history, ledger) are
 * closed with its scope.
 */
export const fromDir = (
  memoryDir: MemoryDir.MemoryDir,
  options: MemoryOptions = {}
): Effect.Effect<MemoryService, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(open(memoryDir, options), (opened) => Effect.sync(opened.close)),
    (opened) => opened.service
  )

export const make = (directory: string, options: MemoryOptions = {}): Effect.Effect<MemoryService, never, Scope.Scope> =>
  Effect.flatMap(MemoryDir.make(directory, { ownerFile: options.ownerFile, fresh: options.fresh }), (memoryDir) => fromDir(memoryDir, options))

/** Memory on PLANCKCLAW_DIR. Scoped: releasing the layer (an agent released by the service) closes its descriptors. */
export const layerWith = (
  options: MemoryOptions
): Layer.Layer<Memory, import("effect/Config").ConfigError | MemoryError> =>
  Layer.effect(
    Memory,
    Effect.gen(function*() {
      const directory = yield* MemoryConfig
      yield* ensureWritable(directory)
      return yield* make(directory, options)
    })
  )

export const layer: Layer.Layer<Memory, import("effect/Config").ConfigError | MemoryError> = layerWith({})
