/**
 * Keeps a background compaction's steps out of an agent's turns. Both share
 * the agent's one thread: a step that runs while a turn waits on a pipe
 * delays that turn's next step by its whole length. Behind the gate, a step
 * due while a turn is in flight waits until that turn ends, so a turn shares
 * the thread with at most the step already under way when it began.
 *
 * A step waits for the turn in flight, not for a quiet moment: a steady
 * stream of messages still lets one step through after each turn, and the
 * compaction ends. A turn that itself waits for the compaction (`/compact`,
 * a forget) opens the gate while it waits.
 */
import * as Effect from "effect/Effect"

export interface TurnGate {
  /** Runs a turn; steps that become due meanwhile wait until it ends. */
  readonly turn: <A, E, R>(turn: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Runs `effect` (a wait for the compaction) with the gate open, so it cannot wait on itself. */
  readonly opened: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Lets the event loop run (a message that came in is taken), then waits
   * for the turn in flight, if any, to end: what a compaction does before
   * each of its steps.
   */
  readonly step: Effect.Effect<void>
}

export const make = (): TurnGate => {
  let turns = 0
  let openers = 0
  const waiting = new Set<() => void>()
  const shut = () => turns > 0 && openers === 0
  const wake = () => {
    if (shut() || waiting.size === 0) return
    const woken = [...waiting]
    waiting.clear()
    for (const resume of woken) resume()
  }
  const leave = Effect.sync(() => {
    turns--
    wake()
  })
  const close = Effect.sync(() => {
    openers--
  })

  const step = Effect.async<void>((resume) => {
    const go = () => resume(Effect.void)
    let pending: ReturnType<typeof setImmediate> | undefined = setImmediate(() => {
      pending = undefined
      if (shut()) waiting.add(go)
      else go()
    })
    return Effect.sync(() => {
      if (pending !== undefined) clearImmediate(pending)
      waiting.delete(go)
    })
  })

  return {
    turn: (turn) =>
      Effect.suspend(() => {
        turns++
        return Effect.ensuring(turn, leave)
      }),
    opened: (effect) =>
      Effect.suspend(() => {
        openers++
        wake()
        return Effect.ensuring(effect, close)
      }),
    step
  }
}
