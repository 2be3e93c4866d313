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
 *
 * A class, its methods shared: serve makes one gate per agent (with its
 * compactor), and a gate of closures held 0.9 KiB more heap by every agent
 * started than this (bench/serve.mjs, 10,000 agents: 442.5 vs 433.6 MiB).
 */
import * as Effect from "effect/Effect"

export class TurnGate {
  private turns = 0
  private openers = 0
  /** The steps waiting for the turn in flight; made when the first one waits. */
  private waiting: Set<() => void> | undefined = undefined

  /**
   * Runs a turn; steps that become due meanwhile wait until it ends. The
   * count is taken, and its release installed, inside one uninterruptible
   * region, so no interruption can leave it counted.
   */
  turn<A, E, R>(turn: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        this.turns++
        return Effect.ensuring(restore(turn), Effect.sync(() => this.leave()))
      })
    )
  }

  /** Runs `effect` (a wait for the compaction) with the gate open, so it cannot wait on itself. */
  opened<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.suspend(() => {
      this.openers++
      this.wake()
      return Effect.ensuring(effect, Effect.sync(() => this.openers--))
    })
  }

  /**
   * Lets the event loop run (a message that came in is taken), then waits
   * for the turn in flight, if any, to end: what a compaction does before
   * each of its steps.
   */
  get step(): Effect.Effect<void> {
    return Effect.callback<void>((resume) => {
      const go = () => resume(Effect.void)
      let pending: ReturnType<typeof setImmediate> | undefined = setImmediate(() => {
        pending = undefined
        if (this.shut()) (this.waiting ??= new Set()).add(go)
        else go()
      })
      return Effect.sync(() => {
        if (pending !== undefined) clearImmediate(pending)
        this.waiting?.delete(go)
      })
    })
  }

  private shut(): boolean {
    return this.turns > 0 && this.openers === 0
  }

  private leave(): void {
    this.turns--
    this.wake()
  }

  private wake(): void {
    if (this.shut() || this.waiting === undefined || this.waiting.size === 0) return
    const woken = [...this.waiting]
    this.waiting.clear()
    for (const resume of woken) resume()
  }
}

export const make = (): TurnGate => new TurnGate()
