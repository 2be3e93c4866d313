/**
 * How the agent's side of a pipe pair tells a built-in bridge of the same
 * process that it gave up a request (its turn was cancelled): the bridge
 * interrupts its work on it (the brain's HTTP request is aborted, a claw's
 * process group killed) and answers at once, so the answer still owed is
 * there before the next request goes out. The wire has no such signal: a
 * bridge in another process finishes the request, and its answer is
 * discarded as a late one (see Exchange).
 *
 * Both ends count the requests on the pipe, in order, from 1: the near end
 * as it writes them, the far end as it reads them.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** Called by the near end: every request up to the `upTo`th it wrote is given up. */
export type AbandonRequests = (upTo: number) => void

export const abandonNothing: AbandonRequests = () => undefined

export interface Abandon {
  readonly abandon: AbandonRequests
  /**
   * The far end's work on its `n`th request, cut short with `instead` when
   * the near end gives that request up (before or while it runs).
   */
  readonly serve: <A>(n: number, work: Effect.Effect<A>, instead: A) => Effect.Effect<A>
}

export const make = (): Abandon => {
  let givenUp = 0
  let current: { readonly n: number; readonly signal: Deferred.Deferred<void> } | undefined
  return {
    abandon: (upTo) => {
      givenUp = Math.max(givenUp, upTo)
      if (current !== undefined && current.n <= givenUp) Deferred.doneUnsafe(current.signal, Exit.void)
    },
    serve: (n, work, instead) =>
      Effect.suspend(() => {
        if (n <= givenUp) return Effect.succeed(instead)
        const signal = Deferred.makeUnsafe<void>()
        current = { n, signal }
        return Effect.raceFirst(work, Effect.as(Deferred.await(signal), instead)).pipe(
          Effect.ensuring(Effect.sync(() => {
            if (current?.signal === signal) current = undefined
          }))
        )
      })
  }
}
