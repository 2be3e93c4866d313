/**
 * The compaction commit of a `planckclaw run`, alongside its appends
 * (CommitMirror.ts): the same files, fsyncs and commit point as the locked
 * commit (FoldStore.ts), but the turns' appends wait only for its
 * synchronous steps, never for its fsyncs, and each step first waits for
 * the turn in flight (`between`: the compaction's TurnGate), so a turn
 * shares the thread with one small step at most.
 *
 * The steps: stage the next summary; read the kept tail and stage the next
 * history (its mirror installed: later appends are copied into it); stage
 * the next ledger from the old one, which names every range appended
 * meanwhile (the run's appender knows it: no read); make the journal
 * appear (the commit point); swap. In the swap's step the run's history
 * store takes the next files over as they are (`swapped`, then
 * HistoryAppender.adopt and SnapshotReader.committed), so the first turn
 * after it neither reads them again nor appends under the lock.
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as CommitAsync from "./CommitAsync.js"
import * as CommitMirror from "./CommitMirror.js"
import * as FileCache from "./FileCache.js"
import * as Layout from "./Layout.js"
import * as Ledger from "./Ledger.js"
import type { FoldPlan, FoldResult } from "./FoldPlan.js"
import { type Alongside, fromFileError, MemoryError } from "./MemoryDir.js"
import * as SafeFile from "../runtime/SafeFile.js"

export interface Store {
  readonly paths: Layout.Paths
  readonly directory: string
  /** The part of history the fold keeps, from the split to the end as it is now. */
  readonly readRest: (plan: FoldPlan) => Result.Result<{ readonly buffer: Buffer; readonly size: number }, MemoryError>
  /** What the kept tail and summary come to. */
  readonly result: (rest: Buffer, summaryFile: string) => FoldResult
}

export const commit = (
  store: Store,
  { ledger: knownLedger, mirrorAppends, step, swapped }: Alongside,
  plan: FoldPlan,
  summaryFile: string,
  between: Effect.Effect<void>
): Effect.Effect<FoldResult, MemoryError> => {
  const { directory, paths } = store
  const gated = <B>(section: () => Result.Result<B, MemoryError>) => Effect.andThen(between, step(section))
  const abandoned = () =>
    new MemoryError({ reason: "io", message: "committing compaction: a turn's append could not be copied into the next history; nothing changed" })
  // Before the journal: the next files go, the old ones hold everything.
  const discard = (error: MemoryError) => Effect.andThen(step(() => Result.succeed(Layout.recover(paths))), Effect.fail(error))

  const stageSummary = gated(() =>
    Result.mapError(
      Result.map(CommitAsync.stage(paths.nextSummary, summaryFile), (summary) => {
        FileCache.settle(summary.fd)
        return summary
      }),
      fromFileError
    )
  )
  // Appendable: the run's history store keeps using it after the swap.
  const stageHistory = gated(() =>
    Result.flatMap(store.readRest(plan), (rest) =>
      Result.map(
        Result.mapError(CommitAsync.stage(paths.nextHistory, rest.buffer, SafeFile.flags.createNewAppendable), fromFileError),
        (history) => {
          const mirror = CommitMirror.make({
            oldInode: plan.inode,
            split: plan.splitOffset,
            history: { fd: history.fd, file: history.file, inode: history.ino },
            journal: paths.journal,
            historyEnd: rest.buffer.length,
            endsWithNewline: rest.buffer.length === 0 || rest.buffer[rest.buffer.length - 1] === 0x0a
          })
          mirrorAppends(mirror)
          return { mirror, atStart: store.result(rest.buffer, summaryFile) }
        }
      ))
  )
  // From the old ledger as it is now: it names the ranges of the appends copied since the history was staged.
  // The run's store knows it (no read, no parse) unless something else wrote it.
  const oldLedger = () => {
    const known = knownLedger()
    return known !== undefined ? Result.succeed(known) : Result.map(SafeFile.read(paths.ledger), Ledger.parse)
  }
  const stageLedger = (mirror: CommitMirror.CommitMirror) =>
    gated(() =>
      Result.mapError(
        Result.flatMap(oldLedger(), (old) => {
          const size = plan.splitOffset + mirror.historyEnd
          const ledger = Ledger.afterFold(old, plan.inode, mirror.history.inode, plan.splitOffset, size)
          const bytes = Buffer.from(Ledger.encode(ledger), "utf8")
          return Result.map(
            CommitAsync.stage(paths.nextLedger, bytes, SafeFile.flags.createNewAppendable),
            (staged) => CommitMirror.ledgerStaged(mirror, staged, ledger, bytes.length)
          )
        }),
        fromFileError
      )
    )

  return Effect.flatMap(stageSummary, (summary) => {
    const closeSummary = Effect.sync(() => CommitAsync.closeAll([summary]))
    const staged = Effect.flatMap(stageHistory, (begun) => Effect.as(stageLedger(begun.mirror), begun)).pipe(
      Effect.tapError(() => closeSummary),
      Effect.catch(discard)
    )
    return Effect.flatMap(staged, ({ atStart, mirror: copy }) => {
      // History and ledger stay open for the copies; MemoryDir closes them when the mirror ends (unless adopted).
      const syncNext = Effect.forEach(
        [copy.history, copy.ledger!, summary],
        (next) => CommitAsync.fsyncOffLoop(next.fd, next.file),
        { concurrency: "unbounded", discard: true }
      ).pipe(Effect.ensuring(closeSummary))
      // The journal appears in a step, so no append falls between it and the copies.
      const journal = gated(() => copy.failed ? Result.fail(abandoned()) : Result.mapError(CommitAsync.stage(paths.journal, ""), fromFileError))
      const commitPoint = Effect.flatMap(journal, (created) =>
        CommitAsync.syncAll([created]).pipe(
          Effect.mapError(fromFileError),
          Effect.tapError(() => step(() => Result.succeed(Result.try(() => fs.unlinkSync(paths.journal)))))
        ))
      const swap = gated(() => {
        if (copy.failed) {
          // A copy that failed removed the journal: recovery then discards the next files.
          Layout.recover(paths)
          return Result.fail(abandoned())
        }
        // The summary renamed over is held open meanwhile: its last close, which frees its blocks
        // (a quarter of a millisecond of the thread in a trace), then goes to the thread pool.
        const oldSummary = Result.getOrUndefined(SafeFile.open(paths.summary, SafeFile.flags.read))
        try {
          Layout.swapIn(paths)
        } finally {
          if (oldSummary !== undefined) fs.close(oldSummary, () => undefined)
        }
        const kept = atStart.kept + copy.copiedLines
        swapped(copy, kept, summaryFile)
        return Result.succeed({ ...atStart, kept })
      })
      // The fsyncs begin in a step after the ledger's: both together held the thread for 0.4 ms.
      return Effect.mapError(Effect.andThen(between, syncNext), fromFileError).pipe(
        Effect.andThen(commitPoint),
        Effect.catch(discard),
        Effect.andThen(CommitAsync.syncDirectory(directory).pipe(Effect.mapError(fromFileError))),
        Effect.andThen(swap),
        // The write lock's release and the rest after the next turn: the run's turns no longer need either.
        Effect.tap(() => between)
      )
    })
  })
}
