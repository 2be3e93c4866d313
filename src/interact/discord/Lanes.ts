/**
 * Work kept in order per key (a channel), and never waiting on another key's:
 * each key with work queued has a fiber of its own that runs it, one piece
 * at a time, and ends once its queue is empty. So a request that stalls (an
 * attachment that never downloads, Discord's history answering 503) holds up
 * only its own channel, and the fibers are bounded by the channels with work.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"

export interface Lanes {
  /** Queues `work` behind the key's earlier work; returns at once. Its failures and defects are the caller's to catch. */
  readonly run: (key: string, work: Effect.Effect<void>) => Effect.Effect<void>
}

/** Lanes whose fibers end with the scope. */
export const make: Effect.Effect<Lanes, never, Scope.Scope> = Effect.gen(function*() {
  const scope = yield* Effect.scope
  const lanes = new Map<string, Queue.Queue<Effect.Effect<void>>>()
  // Taking the last piece and closing the lane happen together, so no piece is queued on a lane that ended.
  const lock = yield* Semaphore.make(1)

  const drain = (key: string, queue: Queue.Queue<Effect.Effect<void>>): Effect.Effect<void> =>
    Effect.gen(function*() {
      for (;;) {
        const next = yield* lock.withPermits(1)(
          Effect.tap(Queue.poll(queue), (work) => Option.isNone(work) ? Effect.sync(() => lanes.delete(key)) : Effect.void)
        )
        if (Option.isNone(next)) return
        yield* next.value
      }
    })

  return {
    run: (key, work) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const existing = lanes.get(key)
        if (existing !== undefined) return yield* Queue.offer(existing, work)
        const queue = yield* Queue.unbounded<Effect.Effect<void>>()
        lanes.set(key, queue)
        yield* Queue.offer(queue, work)
        yield* Effect.forkIn(drain(key, queue), scope)
      })).pipe(Effect.asVoid)
  }
})
