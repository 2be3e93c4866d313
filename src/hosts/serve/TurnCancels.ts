/**
 * Cancelling a turn by its message's Idempotency-Key: a turn running is
 * interrupted (as a stop interrupts it: its brain call and tool calls end
 * with their scopes, nothing is stored), a message still queued is
 * answered without a turn. Either way its caller gets CANCELLED, its reply
 * marked `cancelled` (a model may write the same words, and that answer is
 * kept), which is not kept under the key, so the same key may be sent again for a turn.
 * Once the turn has begun to commit its reply (TurnCommit: journaled, then
 * stored) it is too late: the cancel answers false and the reply comes, so
 * CANCELLED never goes with an exchange that was stored.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { TurnCommit } from "../../agent/TurnCommit.js"

export const CANCELLED = "Cancelled: the turn was stopped before it finished; nothing was stored."

export interface TurnCancels {
  /** A message under `key` was queued. */
  readonly queued: (key: string) => void
  /** Runs the turn of a message under `key` (none: not cancellable); none when it was cancelled, before or during. */
  readonly run: <A, E, R>(key: string | undefined, turn: Effect.Effect<A, E, R>) => Effect.Effect<Option.Option<A>, E, R>
  /** Cancels the turn of `key`: whether one was running (and not yet committing its reply) or queued. */
  readonly cancel: (key: string) => Effect.Effect<boolean>
  /** The message under `key` was answered, with its turn run or without (the cluster: its agent could not start). */
  readonly settled: (key: string) => void
}

export const make = (): TurnCancels => {
  // Made at the first key: most agents are sent none, and an empty Set costs 150 bytes.
  let queued: Set<string> | undefined
  let asked: Set<string> | undefined
  let current: { readonly key: string; readonly signal: Deferred.Deferred<void>; state: "running" | "committed" | "cancelled" } | undefined
  return {
    queued: (key) => {
      queued ??= new Set()
      queued.add(key)
    },
    run: (key, turn) =>
      Effect.suspend(() => {
        if (key === undefined) return Effect.map(turn, Option.some)
        queued?.delete(key)
        if (asked?.delete(key)) return Effect.succeed(Option.none())
        return Effect.flatMap(Deferred.make<void>(), (signal) => {
          const running: NonNullable<typeof current> = { key, signal, state: "running" }
          current = running
          const mayCommit = () => {
            if (running.state === "cancelled") return false
            running.state = "committed"
            return true
          }
          const told = Effect.provideService(Effect.map(turn, Option.some), TurnCommit, mayCommit)
          return Effect.raceFirst(told, Effect.as(Deferred.await(signal), Option.none())).pipe(
            Effect.ensuring(Effect.sync(() => {
              current = undefined
            }))
          )
        })
      }),
    cancel: (key) =>
      Effect.suspend(() => {
        if (current?.key === key) {
          // Its reply is being journaled or stored: it comes, whole.
          if (current.state === "committed") return Effect.succeed(false)
          current.state = "cancelled"
          return Effect.as(Deferred.succeed(current.signal, undefined), true)
        }
        if (!queued?.has(key)) return Effect.succeed(false)
        asked ??= new Set()
        asked.add(key)
        return Effect.succeed(true)
      }),
    settled: (key) => {
      queued?.delete(key)
      asked?.delete(key)
    }
  }
}
