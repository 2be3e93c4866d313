/**
 * Gives back the memory of released agents once `serve` has gone quiet.
 *
 * V8 collects garbage only when the program allocates. After ten thousand
 * agents were released, an idle `serve` allocates almost nothing, so their
 * memory stayed garbage, and resident, as long as it was idle: 741 MiB
 * still a minute after the release, against 164 before the burst. One full
 * collection gives it back (133 MiB ten seconds later), so one is run when agents were released since the last and no
 * message came for a whole quiet interval (PLANCKCLAW_IDLE_COLLECTION).
 * A busy process allocates, and V8 collects it on its own.
 *
 * The collection is V8's own `gc` extension, reached with `--expose-gc` set
 * once the process runs (V8Flags) and read from a new context, as a major
 * collection posted as a task (`execution: "async"`) in its memory-reducing
 * flavour (`"last-resort"`): the regular one frees the heap but keeps the
 * freed pages mapped for reuse, which after a fast burst left hundreds of
 * MiB resident (docs/performance.md, "Memory"). Its longer pause (about
 * 0.4 s against 0.1 with 200 MB still live) is taken only when quiet. Used
 * only by the command line's `serve`: an embedding application's process,
 * its V8.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Config from "effect/Config"
import { numberOf } from "../../config/ConfigRange.js"
import { IdleCollection as IdleCollectionSetting } from "../../config/settings/Serve.js"
import { setV8Flags } from "./V8Flags.js"

/** What the host has done so far: messages accepted, agents released. */
export interface Activity {
  readonly accepted: number
  readonly released: number
}

/**
 * Every `every`: `collect` when an agent was released since the last
 * collection and no message was accepted during the interval. Never ends.
 */
export const whenQuiet = (activity: () => Activity, every: Duration.Input, collect: Effect.Effect<void>): Effect.Effect<never> =>
  Effect.suspend(() => {
    let collectedAfter = activity().released
    let before = activity()
    return Effect.forever(
      Effect.andThen(
        Effect.sleep(every),
        Effect.suspend(() => {
          const now = activity()
          const quiet = now.accepted === before.accepted && now.released > collectedAfter
          before = now
          if (!quiet) return Effect.void
          collectedAfter = now.released
          return collect
        })
      )
    )
  })

type GcFunction = (options: { readonly type: "major"; readonly execution: "async"; readonly flavor: "last-resort" }) => Promise<void>

let exposedGc: GcFunction | undefined

/** A full collection, V8's `gc` made available the first time it is asked for. */
export const majorCollection: Effect.Effect<void> = Effect.gen(function*() {
  if (exposedGc === undefined) {
    yield* setV8Flags("--expose-gc")
    exposedGc = process.getBuiltinModule("node:vm").runInNewContext("gc") as GcFunction
  }
  const gc = exposedGc
  yield* Effect.promise(() => gc({ type: "major", execution: "async", flavor: "last-resort" }))
})

/** The seconds of quiet PLANCKCLAW_IDLE_COLLECTION sets; 0 turns it off. */
export const QuietSecondsConfig: Config.Config<number> = numberOf(IdleCollectionSetting)

/**
 * What `serve` runs beside its host: `whenQuiet` over the host's activity,
 * with `majorCollection`; nothing (never ends) when turned off.
 */
export const run = (activity: () => Activity, quietSeconds: number): Effect.Effect<never> =>
  quietSeconds <= 0
    ? Effect.never
    : whenQuiet(activity, Duration.millis(Math.round(quietSeconds * 1000)), majorCollection).pipe(
      Effect.catchCause((cause) => Effect.andThen(Effect.logWarning("idle collection stopped", cause), Effect.never))
    )
