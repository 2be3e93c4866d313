/**
 * Folds old history into summary.md. The slow part (asking the brain) runs
 * without the write lock, so turns go on meanwhile; only the final swap is
 * locked, and it keeps every line appended since the plan was made. Lines
 * stay strings from the file to the request: a million-line backlog is
 * folded in a small heap.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Brain, type BrainError, responseText } from "../ports/Brain.js"
import { agentConfig } from "../config/AgentConfig.js"
import * as Logging from "../runtime/Logging.js"
import { capText, COMPACTION_MAX_TOKENS, compactionRequest } from "./Prompt.js"
import * as CompactionBackoff from "../memory/CompactionBackoff.js"
import * as FoldStore from "../memory/FoldStore.js"
import { LIMIT_TEXT, PROMPT_FILE_MAX_BYTES } from "../memory/PromptFiles.js"
import { type CompactionBusy, decodeLine, encodeLine, Memory, type MemoryError } from "../memory/Memory.js"
import * as TurnGate from "../memory/TurnGate.js"

export { CompactionBusy } from "../memory/Memory.js"

export interface CompactionReport {
  /** History lines folded into the summary. */
  readonly summarised: number
  /** Lines before the kept tail that did not decode and were dropped. */
  readonly skipped: number
  /** Lines left in history.jsonl. */
  readonly kept: number
  /** Size of summary.md as written. */
  readonly summaryBytes: number
  /** Brain requests made (a large backlog is folded in several). */
  readonly requests: number
}

export class CompactionFailed extends Data.TaggedError("CompactionFailed")<{
  readonly message: string
}> {}

export type CompactionError = CompactionFailed | CompactionBusy | MemoryError

export interface CompactorService {
  /** Compacts when history holds more than HISTORY_MAX lines. */
  readonly compactIfNeeded: Effect.Effect<Option.Option<CompactionReport>, CompactionError>
  /** Compacts whatever is older than the last HISTORY_KEEP lines (after the background one in flight, if any). */
  readonly compactNow: Effect.Effect<Option.Option<CompactionReport>, CompactionError>
  /**
   * Starts a due compaction in the background and returns at once (what a
   * turn does after delivering its reply, so the next message need not
   * wait). One at a time: while one runs, a due compaction is simply tried
   * after the next stored exchange, as a CompactionBusy is. Its failures are
   * logged; history is intact either way.
   */
  readonly startIfNeeded: Effect.Effect<void>
  /** Waits for the background compaction in flight, if any (a piped run's end, a release, `/compact`, a forget). */
  readonly settled: Effect.Effect<void>
  /** Interrupts the background compaction in flight (shutdown); a commit already under way is finished first. */
  readonly stop: Effect.Effect<void>
  /**
   * Runs one of the agent's turns: the background compaction takes its next
   * step after the turn, not during it (TurnGate), so that a turn beside a
   * compaction waits for one step at most, not for all of them.
   */
  readonly turn: <A, E, R>(turn: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class Compactor extends Context.Service<Compactor, CompactorService>()("planckclaw/Compactor") {}

export const make = Effect.gen(function*() {
  const config = yield* agentConfig
  const memory = yield* Memory
  const folds = yield* FoldStore.FoldStore
  const brain = yield* Brain
  // Each step is well under a millisecond of the thread; the turns come first.
  const gate = TurnGate.make()
  // After a failure, no new try until history has grown (CompactionBackoff.ts).
  const backoff = CompactionBackoff.make(config.historyKeep, config.historyMax)
  // A turn's locked section may wait for a run's commit, which holds the write lock file across its gated steps.
  memory.memoryDir.openGateWhileLocked?.((effect) => gate.opened(effect))

  const due = memory.hasMoreLinesThan(config.historyMax)

  const run = (force: boolean) =>
    folds.exclusiveCompaction(Effect.gen(function*() {
      // Taking the lock is a step of its own: the fork, the span and the lock file come to a third of a millisecond.
      yield* gate.step
      // Asked again under the lock: another process may have compacted meanwhile.
      if (!force && !(yield* due)) return Option.none()
      yield* gate.step
      const plan = yield* folds.planFold(config.historyKeep)
      if (Option.isNone(plan)) return Option.none()
      yield* gate.step
      const { summary: previous } = yield* memory.snapshot(0)
      yield* gate.step

      // Mutable on purpose: a million-line backlog must not be copied per line.
      const fold = { summary: previous, batch: [] as Array<string>, batchChars: 0, summarised: 0, skipped: 0 }
      let requests = 0
      const flush = Effect.suspend(() => {
        if (fold.batch.length === 0) return Effect.void
        return Effect.andThen(gate.step, brain.complete(compactionRequest(config.model, fold.summary, fold.batch)).pipe(
          Effect.mapError((error: BrainError) =>
            new CompactionFailed({ message: `the brain could not summarise (${error.reason}: ${error.detail})` })
          ),
          Effect.flatMap((response) => {
            // A tool call is no summary, whatever text came with it ("Let me check."): folding under it would lose the lines.
            if (response.stop_reason === "tool_use" || response.content.some((block) => block.type === "tool_use")) {
              return Effect.fail(new CompactionFailed({ message: "the brain answered the summary request with a tool call, not a summary" }))
            }
            // Stopped by the model's safety filter: what came before the stop is part of a summary, never one.
            if (response.stop_reason === "refusal") {
              return Effect.fail(new CompactionFailed({ message: "the model's safety filter stopped the summary" }))
            }
            const summary = responseText(response).trim()
            if (summary.length === 0) {
              return Effect.fail(new CompactionFailed({ message: "the brain answered an empty summary" }))
            }
            // summary.md holds it and a newline (FoldStore); past its limit, as from a brain that ignores
            // max_tokens, every start would refuse the directory.
            const summaryFileBytes = Buffer.byteLength(summary, "utf8") + 1
            if (summaryFileBytes > PROMPT_FILE_MAX_BYTES) {
              return Effect.fail(
                new CompactionFailed({
                  message: `the brain's summary would make summary.md ${summaryFileBytes} bytes, over its limit of ` +
                    `${PROMPT_FILE_MAX_BYTES} bytes (${LIMIT_TEXT})`
                })
              )
            }
            fold.summary = summary
            fold.summarised += fold.batch.length
            fold.batch = []
            fold.batchChars = 0
            requests++
            // Kept, as failing would ask again (and pay) after every turn to the same end; but not in silence.
            return response.stop_reason === "max_tokens"
              ? Effect.logWarning(
                `compaction: the summary reached its ${COMPACTION_MAX_TOKENS}-token limit and was cut off: what it held past ` +
                  "that is lost; shorten summary.md by hand so the next one fits"
              )
              : Effect.void
          })
        ))
      })

      // A plain loop over each block of lines, leaving it only to ask the brain when a batch is full.
      const foldFrom = (lines: ReadonlyArray<string>, from: number): Effect.Effect<void, CompactionError> => {
        for (let index = from; index < lines.length; index++) {
          const raw = lines[index]!
          const entry = decodeLine(raw)
          if (Option.isNone(entry)) {
            fold.skipped++
            continue
          }
          // A giant line is folded cut, as a turn sends it; the usual line goes as it is.
          const content = capText(entry.value.content)
          const line = content === entry.value.content ? raw : encodeLine({ role: entry.value.role, content })
          fold.batch.push(line)
          fold.batchChars += line.length
          if (fold.batchChars >= config.compactionChunkChars) return Effect.andThen(flush, Effect.suspend(() => foldFrom(lines, index + 1)))
        }
        return Effect.void
      }
      const whole = yield* folds.readLinesToFold(plan.value)
      yield* Option.isSome(whole) ? foldFrom(whole.value, 0) : folds.linesToFold(plan.value).pipe(
        Stream.runForEachArray((lines) => foldFrom(lines, 0))
      )
      yield* flush
      if (requests === 0 && fold.skipped === 0) return Option.none()

      yield* gate.step
      const { kept, summaryBytes } = yield* folds.commitFold(plan.value, fold.summary, gate.step)
      // The commit ends on the directory's fsync, whose callback may come while a turn waits on a pipe:
      // what follows (the log line, the compaction lock's release) is a step of its own, after that turn.
      yield* gate.step
      const report: CompactionReport = {
        summarised: fold.summarised,
        skipped: fold.skipped,
        kept,
        summaryBytes,
        requests
      }
      yield* Effect.logInfo(
        `compaction: summarised ${report.summarised} lines, kept ${report.kept}, summary ${report.summaryBytes} bytes`
      )
      // The turns read only the tail, so nothing else ever says that these lines are gone.
      if (report.skipped > 0) {
        yield* Effect.logWarning(
          `compaction: dropped ${report.skipped} line${report.skipped === 1 ? "" : "s"} of history.jsonl that did not decode ` +
            "(not a JSON line of a user's or an assistant's message); " +
            `${report.skipped === 1 ? "it is" : "they are"} in neither summary.md nor history.jsonl now`
        )
      }
      // The compaction lock's release and the span's end: a step of their own, apart from the log line.
      yield* gate.step
      return Option.some(report)
    })).pipe(
      Effect.withSpan("Compactor.compact", { attributes: { force } }, { captureStackTrace: false }),
      // A host embedding the agent keeps its stdout for its own output.
      Logging.toStderr
    )

  // For a host that compacts inline (the agent's turns start theirs in the background: startIfNeeded);
  // opened, as the caller waits for all of it. Not while memory cannot be written (a full disk):
  // the brain's summary could not be kept.
  const compactIfNeeded = gate.opened(Effect.flatMap(
    memory.storageFailing,
    (failing) =>
      failing || backoff.exchangeStored() ? Effect.succeedNone : Effect.flatMap(due, (needed) => needed ? run(false) : Effect.succeedNone).pipe(
        Effect.tapError((error) => Effect.sync(() => error._tag === "CompactionBusy" || backoff.failed())),
        Effect.tap(() => Effect.sync(() => backoff.succeeded()))
      )
  ))

  // The background compaction in flight. Daemon fibers, ended by their owner's
  // scope (Agent.make: awaited when it closes normally, interrupted on shutdown),
  // not by the fiber that happened to start them.
  let inFlight: Fiber.Fiber<void> | undefined
  // Said once per failure, which is once per backoff: the turns meanwhile do not try, and log nothing.
  // Only a failure of the brain's summary is known to leave history as it was.
  const logged = (effect: Effect.Effect<unknown, CompactionError>) =>
    effect.pipe(
      Effect.tap(() => Effect.sync(() => backoff.succeeded())),
      Effect.catch((error) =>
        error._tag === "CompactionBusy" ? Effect.void : Effect.suspend(() => {
          const lines = backoff.failed()
          return Effect.logWarning(
            `compaction did not run: ${error.message}; ${error._tag === "CompactionFailed" ? "history is unchanged; " : ""}` +
              `not tried again until ${lines} more lines of history are stored`
          )
        })
      ),
      Effect.asVoid,
      Logging.toStderr
    )
  // Opened: a turn that waits for the compaction (`/compact`, a forget) must not hold its steps back.
  const settled: Effect.Effect<void> = Effect.suspend(() =>
    inFlight === undefined ? Effect.void : gate.opened(Fiber.await(inFlight))
  ).pipe(Effect.asVoid)
  // A background compaction keeps what the turns appended while it ran, which can leave history over
  // HISTORY_MAX again: compacted again at once, not only at the agent's next message, which may never come.
  // A function, so nothing of it is built until a compaction is due (see `start`).
  const untilCaughtUp = (): Effect.Effect<void, CompactionError> =>
    Effect.flatMap(run(false), (report) =>
      Option.isNone(report)
        ? Effect.void
        // Asked without the lock first, as a turn does: usually not due, and then nothing more is taken.
        // A step of its own too: it reads history's tail.
        : Effect.flatMap(Effect.andThen(gate.step, due), (needed) => needed ? untilCaughtUp() : Effect.void))
  // Built when a compaction is due, not per agent started: serve makes one compactor per agent,
  // and the eager pipeline held 8.9 KiB more heap by every agent started (bench/serve.mjs, 10,000).
  const start = Effect.suspend(() =>
    Effect.flatMap(Effect.forkDetach(Effect.interruptible(logged(untilCaughtUp()))), (fiber) =>
      Effect.sync(() => {
        inFlight = fiber
        fiber.addObserver(() => {
          if (inFlight === fiber) inFlight = undefined
        })
      }))
  )
  // The question "is it due?" is asked here, in the turn's fiber: most turns end with it, and fork nothing.
  const startIfNeeded = Effect.suspend(() =>
    inFlight !== undefined || backoff.exchangeStored() ? Effect.void : Effect.flatMap(
      memory.storageFailing,
      (failing) =>
        failing ? Effect.void : Effect.matchEffect(due, {
          onFailure: (error) => logged(Effect.fail(error)),
          onSuccess: (needed) => needed ? start : Effect.void
        })
    )
  )

  return {
    compactIfNeeded,
    // Own background work first: `/compact` must not answer "already running" about this very agent.
    // Asked for (`/compact`, often from a turn), it runs whole: its steps do not wait for the turn that waits for them.
    compactNow: gate.opened(Effect.andThen(settled, Effect.suspend(() => run(true)))).pipe(
      Effect.tap(() => Effect.sync(() => backoff.succeeded()))
    ),
    startIfNeeded,
    settled,
    stop: Effect.suspend(() => inFlight === undefined ? Effect.void : Fiber.interrupt(inFlight)).pipe(Effect.asVoid),
    turn: (turn) => gate.turn(turn)
  } satisfies CompactorService
})

/** The fold store is built inside, on the provided Memory's directory: both share one write mutex. */
export const layer: Layer.Layer<
  Compactor,
  import("effect/Config").ConfigError,
  Memory | Brain
> = Layer.effect(Compactor, make).pipe(Layer.provide(FoldStore.layer))
