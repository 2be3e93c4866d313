/**
 * The terminal's "thinking" line: while the agent works on a message, a
 * spinner with the seconds elapsed, redrawn in place, cleared before the
 * reply is printed. On a terminal only: piped output never sees it. Time
 * comes from the Effect Clock, so tests drive it with TestClock.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
/** Back to the start of the line and erase it. */
export const CLEAR = "\r\u001b[2K"
export const FRAME_INTERVAL = "250 millis"
/** A quick answer (a command) shows no spinner at all. */
export const FIRST_FRAME_AFTER = "400 millis"

/** The line drawn `elapsedMillis` into the wait, frame `tick`. */
export const line = (tick: number, elapsedMillis: number): string =>
  `${CLEAR}${FRAMES[tick % FRAMES.length]} thinking… ${Math.floor(elapsedMillis / 1000)}s`

export interface Spinner {
  /** A message went to the agent: spin from now unless already spinning. */
  readonly waiting: Effect.Effect<void>
  /** A reply arrived: the line is erased, before the reply is written. True while other messages still wait. */
  readonly answered: Effect.Effect<boolean>
  /** After the reply is written: spins again, counting from now, if other messages still wait. */
  readonly resume: Effect.Effect<void>
  /** The turn shows itself (its first event): the line is erased until the reply, the message still waiting. */
  readonly quiet: Effect.Effect<void>
}

/** A spinner that writes with `draw` (synchronously, to the terminal); its fiber lives in `scope`. */
export const make = (draw: (text: string) => void): Effect.Effect<Spinner, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    let outstanding = 0
    let fiber: Fiber.Fiber<unknown> | undefined
    let shown = false

    const spin = Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      yield* Effect.sleep(FIRST_FRAME_AFTER)
      let tick = 0
      yield* Effect.repeat(
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            draw(line(tick++, now - started))
            shown = true
          })),
        Schedule.spaced(FRAME_INTERVAL)
      )
    })

    const start = Effect.suspend(() =>
      Effect.map(Effect.forkIn(spin, scope), (forked) => {
        fiber = forked
      })
    )

    const stop = Effect.suspend(() => {
      const running = fiber
      fiber = undefined
      return (running === undefined ? Effect.void : Fiber.interrupt(running)).pipe(
        Effect.andThen(Effect.sync(() => {
          if (shown) draw(CLEAR)
          shown = false
        }))
      )
    })

    // A spinner drawn when the terminal is given back is erased, so the shell's prompt starts a clean line.
    yield* Effect.addFinalizer(() => stop)

    return {
      waiting: Effect.suspend(() => {
        outstanding++
        return fiber === undefined ? start : Effect.void
      }),
      answered: Effect.suspend(() => {
        outstanding = Math.max(0, outstanding - 1)
        return Effect.as(stop, outstanding > 0)
      }),
      resume: Effect.suspend(() => outstanding > 0 && fiber === undefined ? start : Effect.void),
      quiet: stop
    }
  })
