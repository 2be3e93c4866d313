/**
 * What Ctrl-C does on the terminal. On a half-typed line it clears the line
 * (readline's buffer, emptied where the key arrives); while the agent works
 * on a message it cancels it; on an empty prompt the first press says how to
 * leave and a second within `LEAVE_WINDOW` leaves, as Ctrl-D does. Time
 * comes from the Effect Clock, so tests drive the window with TestClock.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** A second Ctrl-C on an empty prompt within this leaves. */
export const LEAVE_WINDOW = Duration.seconds(2)
/** Said at the first Ctrl-C on an empty prompt. */
export const LEAVE_HINT = "(To leave, press Ctrl-C again or Ctrl-D.)"
/** How a Ctrl-C shows where it was pressed, as shells show it. */
export const ECHO = "^C"

export type Action =
  /** The half-typed line was cleared: nothing more to do. */
  | "cleared"
  /** The agent is working on messages of ours: cancel them. */
  | "cancel"
  /** An empty prompt, the first press: say how to leave. */
  | "hint"
  /** An empty prompt, pressed again within the window: leave. */
  | "leave"

export interface Press {
  /** The line held typed text, which was cleared. */
  readonly cleared: boolean
  /** Messages sent are still waiting for their replies. */
  readonly busy: boolean
}

/** Decides each press; remembers when the last `hint` was given. */
export const make = () => {
  let hinted: number | undefined
  return (press: Press): Effect.Effect<Action> =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      if (press.cleared || press.busy) {
        hinted = undefined
        return press.cleared ? "cleared" : "cancel"
      }
      if (hinted !== undefined && now - hinted <= Duration.toMillis(LEAVE_WINDOW)) return "leave"
      hinted = now
      return "hint"
    })
}
