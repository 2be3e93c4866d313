/**
 * One turn of Node's event loop: resumes from `setImmediate`, so whatever
 * the loop has ready (I/O, timers) runs first. `Effect.yieldNow` yields to
 * Effect's scheduler only, which need not let the loop turn.
 */
import * as Effect from "effect/Effect"

export const nextTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  setImmediate(() => resume(Effect.void))
})
