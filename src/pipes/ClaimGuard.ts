/**
 * The pid files of a runtime directory (the run's `planckclaw.pid`, the
 * bridges' claims) are judged, removed when their holder is dead, and
 * created under `<file>.takeover` (runtime/process/Takeover), one process
 * at a time. Two starts that both found a dead holder's file would
 * otherwise both remove it, the later removing the file the earlier had
 * just made, and both would hold the directory or the role. Creating under
 * the guard too means that a file judged under it is never one being
 * written: an empty one was left by a start killed while writing it.
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Takeover from "../runtime/process/Takeover.js"
import { RuntimeDirError } from "./RuntimeDirError.js"

/** Another live process holds the guard: it is claiming the file now (`takerPid`, unknown while its guard is being written). */
export class ClaimBusy extends Data.TaggedError("ClaimBusy")<{
  readonly takerPid: number | undefined
}> {}

/** The guard of `file`, asked again at once after removing a killed taker's. */
const enter = (file: string): Effect.Effect<Takeover.Entry> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => Takeover.enterClearingSync(file, now)))

/** `judge` (which may remove `file` and make our own) run under the guard of `file`; ClaimBusy while another process holds it. */
export const guarded = <A, E, R>(
  file: string,
  judge: Effect.Effect<A, E, R>
): Effect.Effect<A, E | ClaimBusy | RuntimeDirError, R> =>
  Effect.acquireUseRelease(
    enter(file),
    (entry): Effect.Effect<A, E | ClaimBusy | RuntimeDirError, R> => {
      switch (entry._tag) {
        case "Entered":
          return judge
        case "Busy":
          return Effect.fail(new ClaimBusy({ takerPid: entry.takerPid }))
        case "Cleared":
          return Effect.fail(new ClaimBusy({ takerPid: undefined }))
        case "Failed":
          return Effect.fail(
            new RuntimeDirError({ reason: "io", message: `cannot create ${entry.guard}: ${entry.failure.message}`, cause: entry.failure })
          )
      }
    },
    (entry) => entry._tag === "Entered" ? Effect.sync(() => Takeover.leaveSync(entry.guard)) : Effect.void
  )

/**
 * `guarded`, asked again while another process holds the guard: its claim
 * takes microseconds, after which ours judges what it made; a guard it left
 * empty, killed while writing it, is stale after a second. Fails with the
 * last ClaimBusy if the guard is still held after that.
 */
export const guardedPatiently = <A, E, R>(
  file: string,
  judge: Effect.Effect<A, E, R>
): Effect.Effect<A, E | ClaimBusy | RuntimeDirError, R> =>
  guarded(file, judge).pipe(
    Effect.retry({
      schedule: Schedule.spaced(Duration.millis(20)).pipe(
        Schedule.upTo({ duration: Duration.millis(Takeover.BEING_WRITTEN_MS + 200) })
      ),
      while: (error) => error instanceof ClaimBusy
    })
  )
