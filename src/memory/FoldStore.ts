/**
 * The compaction's view of the memory store: plan a fold of the lines older
 * than the kept tail, stream them, and commit the new summary with the rest
 * of history. It is built on the same MemoryDir as the history store
 * (Memory.ts), so a commit and a turn's append in one process take turns
 * under one write mutex before the cross-process lock.
 *
 * The commit is a journal (Layout.ts): the next summary, history and ledger
 * are written beside the old ones and synced, then the journal file appears
 * (the commit point), the directory is synced, the files are renamed into
 * place, and the directory is synced again (after the write lock is let go,
 * so the next append need not wait for it). A kill at any instant leaves the
 * old files or the new, never a mix.
 */
import * as fs from "node:fs"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as FileCache from "./FileCache.js"
import * as FileLock from "./FileLock.js"
import { readRange, scanTail, splitLines, streamLines } from "./HistoryFile.js"
import * as Layout from "./Layout.js"
import * as Ledger from "./Ledger.js"
import { Memory } from "./Memory.js"
import * as CommitAsync from "./CommitAsync.js"
import * as CommitAlongside from "./CommitAlongside.js"
import type { FoldPlan, FoldResult } from "./FoldPlan.js"
import { CompactionBusy, fromFileError, fsEffect, type MemoryDir, MemoryError, withHistory } from "./MemoryDir.js"
import * as SafeFile from "../runtime/SafeFile.js"

export { CompactionBusy } from "./MemoryDir.js"

/** Folds up to this size are read whole: far above HISTORY_MAX's usual lines, far below a backlog's. */
const WHOLE_READ_BYTES = 1024 * 1024

/** Bytes each side of the split a plan remembers (FoldPlan.splitBytes): enough to see lines moved by an edit. */
const AROUND_SPLIT = 256

/** The bytes of [start, end) of `fd`, fewer if the file ends sooner. */
const bytesAt = (fd: number, start: number, end: number): Buffer => {
  const bytes = Buffer.alloc(Math.max(0, end - start))
  let read = 0
  while (read < bytes.length) {
    const n = fs.readSync(fd, bytes, read, bytes.length - read, start + read)
    if (n === 0) break
    read += n
  }
  return bytes.subarray(0, read)
}

/** The three next files of a commit, staged (written, open, not yet synced). */
interface NextFiles {
  readonly summary: CommitAsync.Staged
  readonly history: CommitAsync.Staged
  readonly ledger: CommitAsync.Staged
  /** The next ledger's size. */
  readonly ledgerBytes: number
}

export type { FoldPlan, FoldResult } from "./FoldPlan.js"

export interface FoldStoreService {
  /** Runs `effect` as the only compaction on this directory, across processes. */
  readonly exclusiveCompaction: <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | MemoryError | CompactionBusy, R>
  /** The fold for a history keeping its last `keep` lines; none when nothing is older. */
  readonly planFold: (keep: number) => Effect.Effect<Option.Option<FoldPlan>, MemoryError>
  /**
   * The raw lines before the plan's split in one read when they are few (a
   * usual fold: no stream to set up, which cost a turn beside it more than
   * the fold itself); none for a backlog, which `linesToFold` streams.
   */
  readonly readLinesToFold: (plan: FoldPlan) => Effect.Effect<Option.Option<ReadonlyArray<string>>, MemoryError>
  /** The raw lines before the plan's split, read forward in blocks; decode them with Memory.decodeLine. */
  readonly linesToFold: (plan: FoldPlan) => Stream.Stream<string, MemoryError>
  /**
   * In a run (alongside its appends), `between` runs before each of the
   * commit's steps: the compaction's wait for the turn in flight.
   */
  readonly commitFold: (plan: FoldPlan, summary: string, between?: Effect.Effect<void>) => Effect.Effect<FoldResult, MemoryError>
}

export class FoldStore extends Context.Service<FoldStore, FoldStoreService>()("planckclaw/FoldStore") {}

/** The fold store on a memory directory: pass the history store's `memoryDir` so both share its lock. */
export const make = (memoryDir: MemoryDir): FoldStoreService => {
  const { compactionMutex, directory, locked, paths, storeWorked } = memoryDir

  const exclusiveCompaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    compactionMutex.withPermitsIfAvailable(1)(
      Effect.scoped(
        // Taken as the directory's other locks are: a link where it can be, which makes and frees no inode.
        (memoryDir.holdCompactionLock ?? FileLock.hold(paths.compactionLock)).pipe(
          Effect.catchTags({
            LockHeld: (error) => new CompactionBusy({ ownerPid: error.ownerPid }),
            LockFailed: (error) => new MemoryError({ reason: "locked", message: `cannot lock ${directory}: ${error.message}` })
          }),
          // While held, no other process can commit: this process's appends need not look for one.
          Effect.andThen(Effect.acquireRelease(
            Effect.sync(() => memoryDir.compacting?.(true)),
            () => Effect.sync(() => memoryDir.compacting?.(false))
          )),
          Effect.andThen(effect)
        )
      )
    ).pipe(
      Effect.flatMap((ran) =>
        Option.match(ran, {
          onNone: () => Effect.fail(new CompactionBusy({ ownerPid: process.pid })),
          onSome: (value) => Effect.succeed(value)
        })
      )
    )

  // Inode, size, and modification and change times to the nanosecond: any write, by an editor in place or by a rename, changes one.
  const summaryStamp = (): Result.Result<string, MemoryError> => {
    const stat = Result.try(() => fs.lstatSync(paths.summary, { bigint: true, throwIfNoEntry: false }))
    if (Result.isFailure(stat)) return Result.fail(fromFileError(SafeFile.failed(paths.summary, stat.failure)))
    const found = stat.success
    return Result.succeed(found === undefined ? "absent" : `${found.ino}:${found.size}:${found.mtimeNs}:${found.ctimeNs}`)
  }

  const planFold = (keep: number) =>
    locked("planning compaction", () =>
      Result.flatMap(summaryStamp(), (stamp) => withHistory(paths.history, SafeFile.flags.read, Option.none<FoldPlan>(), (fd, stat) => {
        const tail = scanTail(fd, keep, stat.size)
        const inode = stat.ino
        // keep = 0 folds everything; otherwise a short history has nothing older.
        const older = keep === 0 ? tail.offset > 0 : tail.count === keep && tail.offset > 0
        if (!older) return Result.succeed(Option.none<FoldPlan>())
        const splitBytes = bytesAt(fd, Math.max(0, tail.offset - AROUND_SPLIT), Math.min(stat.size, tail.offset + AROUND_SPLIT))
        return Result.succeed(Option.some({ splitOffset: tail.offset, inode, summaryStamp: stamp, splitBytes }))
      })))

  // The usual fold (a few hundred lines) is read in one go; a backlog in blocks, so it never sits whole in memory.
  const readLinesToFold = (plan: FoldPlan) =>
    plan.splitOffset > WHOLE_READ_BYTES
      ? Effect.succeedNone
      : fsEffect("reading history.jsonl", () =>
        withHistory(paths.history, SafeFile.flags.read, Option.none<ReadonlyArray<string>>(), (fd) =>
          Result.succeed(Option.some(splitLines(readRange(fd, 0, plan.splitOffset))))))

  const linesToFold = (plan: FoldPlan) =>
    streamLines(paths.history, plan.splitOffset).pipe(
      Stream.mapError((cause) => new MemoryError({ reason: "io", message: `reading history.jsonl: ${cause.message}`, cause }))
    )

  /**
   * Writes the next summary, history and ledger beside the old ones (not
   * yet synced, still open); on a failure, none is left behind.
   */
  const stageNext = (
    plan: FoldPlan,
    summaryFile: string,
    rest: Buffer,
    size: number
  ): Result.Result<NextFiles, SafeFile.MemoryFileError> => {
    const staged: Array<CommitAsync.Staged> = []
    const steps = Result.flatMap(SafeFile.read(paths.ledger), (text) =>
      Result.flatMap(CommitAsync.stage(paths.nextSummary, summaryFile), (summary) => {
        staged.push(summary)
        FileCache.settle(summary.fd)
        return Result.flatMap(CommitAsync.stage(paths.nextHistory, rest), (history) => {
          staged.push(history)
          const nextLedger = Buffer.from(
            Ledger.encode(Ledger.afterFold(Ledger.parse(text), plan.inode, history.ino, plan.splitOffset, size)),
            "utf8"
          )
          return Result.map(CommitAsync.stage(paths.nextLedger, nextLedger), (ledger) => {
            staged.push(ledger)
            return { summary, history, ledger, ledgerBytes: nextLedger.length }
          })
        })
      }))
    if (Result.isFailure(steps)) {
      CommitAsync.closeAll(staged)
      Layout.recover(paths)
    }
    return steps
  }

  /** Stages the next files, then commits them, with the fsyncs off the event loop (CommitAsync.ts). */
  const commitOffLoop = (plan: FoldPlan, summaryFile: string, rest: Buffer, size: number): Effect.Effect<void, MemoryError> =>
    Effect.flatMap(fsEffect("committing compaction", () => Result.mapError(stageNext(plan, summaryFile, rest, size), fromFileError)), (next) => {
      const discard = (error: SafeFile.MemoryFileError) =>
        Effect.andThen(fsEffect("discarding a compaction", () => Result.succeed(Layout.recover(paths))), Effect.fail(fromFileError(error)))
      return CommitAsync.syncAll([next.summary, next.history, next.ledger]).pipe(
        // The journal's appearance is the commit point: from here recovery completes the swap.
        Effect.andThen(CommitAsync.writeNew(paths.journal, "")),
        Effect.catch(discard),
        Effect.andThen(CommitAsync.syncDirectory(directory).pipe(
          Effect.andThen(fsEffect("committing compaction", () => Result.succeed(Layout.recover(paths)))),
          Effect.mapError((error) => error._tag === "MemoryError" ? error : fromFileError(error))
        ))
      )
    })

  /** The part of history the fold keeps: from the split to the end, as it is now (under the lock). */
  const readRest = (plan: FoldPlan): Result.Result<{ readonly buffer: Buffer; readonly size: number }, MemoryError> => {
    const stamp = summaryStamp()
    if (Result.isFailure(stamp)) return Result.fail(stamp.failure)
    if (plan.summaryStamp !== undefined && stamp.success !== plan.summaryStamp) {
      return Result.fail(
        new MemoryError({ reason: "replaced", message: "summary.md was changed during compaction; nothing changed" })
      )
    }
    const rest = withHistory(paths.history, SafeFile.flags.read, undefined, (fd, stat) => {
      if (stat.ino !== plan.inode || stat.size < plan.splitOffset) return Result.succeed(undefined)
      // Appends leave these bytes as they were; an edit before the split moves them.
      if (plan.splitBytes !== undefined) {
        const from = Math.max(0, plan.splitOffset - AROUND_SPLIT)
        if (!bytesAt(fd, from, from + plan.splitBytes.length).equals(plan.splitBytes)) {
          return Result.fail(new MemoryError({ reason: "replaced", message: "history.jsonl was edited during compaction; nothing changed" }))
        }
      }
      const buffer = Buffer.allocUnsafe(stat.size - plan.splitOffset)
      fs.readSync(fd, buffer, 0, buffer.length, plan.splitOffset)
      return Result.succeed({ buffer, size: stat.size })
    })
    if (Result.isFailure(rest)) return Result.fail(rest.failure)
    if (rest.success === undefined) {
      return Result.fail(
        new MemoryError({
          reason: "replaced",
          message: "history.jsonl was replaced or shortened during compaction; nothing changed"
        })
      )
    }
    return Result.succeed(rest.success)
  }

  const result = (rest: Buffer, summaryFile: string): FoldResult => ({
    kept: splitLines(rest.toString("utf8")).length,
    summaryBytes: Buffer.byteLength(summaryFile, "utf8")
  })

  const commitFold = (plan: FoldPlan, summary: string, between: Effect.Effect<void> = Effect.void) => {
    const summaryFile = summary.length === 0 || summary.endsWith("\n") ? summary : `${summary}\n`
    const committed = memoryDir.lockedAlongside?.(
      "committing compaction",
      (along) => CommitAlongside.commit({ paths, directory, readRest, result }, along, plan, summaryFile, between)
    ) ??
      memoryDir.lockedAsync(
        "committing compaction",
        Effect.flatMap(fsEffect("committing compaction", () => readRest(plan)), (rest) =>
          Effect.as(commitOffLoop(plan, summaryFile, rest.buffer, rest.size), result(rest.buffer, summaryFile)))
      )
    // The renames made durable after the write lock is let go: the swap is
    // whole in the directory already (what a killed process leaves), and the
    // next append need not wait for this fsync (0.2–6 ms here). No other
    // compaction can begin meanwhile: this one still holds the compaction lock.
    // (In a run, after a step: the write lock's release comes before it, and the turns come first.)
    return committed.pipe(
      Effect.tap(() => Effect.andThen(between, CommitAsync.syncDirectory(directory).pipe(Effect.mapError(fromFileError)))),
      Effect.tap(() => storeWorked)
    )
  }

  return { exclusiveCompaction, planFold, readLinesToFold, linesToFold, commitFold }
}

/** Built on the history store's directory, so turn and compaction share one write mutex. */
export const layer: Layer.Layer<FoldStore, never, Memory> = Layer.effect(
  FoldStore,
  Effect.map(Memory, (memory) => make(memory.memoryDir))
)
