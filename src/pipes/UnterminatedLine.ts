/**
 * Where a line on interact_in ends when its writer went away without its
 * newline. The agent holds the pipe open itself, so it never sees a writer
 * close, and the next writer's line, maybe from another channel, would be
 * glued to it (its words then answered to the first channel). Two signs
 * that the writer went: nothing more came for `unterminatedWait` while the
 * pipe flowed, or the bridge process writing it exited (`writerExited`: an
 * executable the run started, whose restart comes sooner than that wait).
 * Either way the part held is taken as a whole line, with a warning.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { Frame, LineFramer } from "../runtime/Framing.js"
import { nextTurn } from "../runtime/process/NextTurn.js"
import { takeUnread } from "./PipeEnd.js"

/**
 * How long part of a line may wait for the rest while the reader takes
 * what comes: a writer sends a line in one write, or in pieces microseconds
 * apart, so a line still open after this was left without its newline.
 */
export const unterminatedWait = Duration.seconds(2)

export interface UnterminatedLine {
  /** Each chunk read, in order: cut into lines; a line left open is watched. */
  readonly push: (chunk: Uint8Array) => void
  /** The reader flows again: a line left open is watched. */
  readonly watch: () => void
  /** The writer's process exited: what it wrote, read already or still in the pipe, is all of its last line. */
  readonly writerExited: Effect.Effect<void>
}

export interface UnterminatedLineOptions {
  readonly pipe: string
  readonly framer: LineFramer
  readonly onFrames: (frames: ReadonlyArray<Frame>) => void
  /** Runs an effect from a callback, for the life of the reader. */
  readonly background: (effect: Effect.Effect<void>) => void
  /** Whether the reader is paused: the rest of a line is then in the pipe, waiting for us, and nothing is cut. */
  readonly paused: () => boolean
  /**
   * Lets the reader's socket give what it read ahead while paused, which
   * comes before what the pipe still holds; false when the pipe is read no
   * more (stopped, broken). `endDrain` puts the reader back as it wants,
   * and says whether the pipe is still read (a stop may have come meanwhile).
   */
  readonly startDrain: () => boolean
  readonly endDrain: () => boolean
}

export const make = (options: UnterminatedLineOptions): UnterminatedLine => {
  const { framer, onFrames } = options
  const taken = (when: string) =>
    Effect.logWarning(`a line on interact_in had no newline ${when}: taken as a whole line (a writer must end each line with \\n)`)

  // Each chunk is a new generation: a line left open is ended only if nothing came for a whole wait.
  let generation = 0
  let watching = false
  const watch = () => {
    if (watching || options.paused() || !framer.holding()) return
    watching = true
    const seen = generation
    options.background(Effect.sleep(unterminatedWait).pipe(Effect.andThen(Effect.suspend(() => {
      watching = false
      if (seen !== generation || options.paused()) {
        watch()
        return Effect.void
      }
      const frames = framer.end()
      if (frames.length === 0) return Effect.void
      onFrames(frames)
      return taken(`after ${Duration.format(unterminatedWait)} with nothing more`)
    }))))
  }
  const push = (chunk: Uint8Array) => {
    generation++
    onFrames(framer.push(chunk))
    if (!watching && framer.holding()) watch()
  }

  // Heard before the restart (ExternalBridge), so no byte of the next process is in the pipe yet.
  // Its warnings go through `background`: the exit is heard on the bridge's fiber, not the reader's.
  const writerExited = Effect.suspend(() => {
    if (!options.startDrain()) return Effect.void
    // One turn of the event loop: what the socket held comes through `push` first, in order.
    const turned = Effect.onInterrupt(nextTurn, () => Effect.sync(() => void options.endDrain()))
    return Effect.andThen(turned, Effect.sync(() => {
      // Stopped meanwhile: what the pipe held was the stop's to take (UnreadMessages).
      if (!options.endDrain()) return
      const unread = takeUnread(options.pipe)
      if (Result.isFailure(unread)) {
        options.background(Effect.logWarning(`cannot read what the exited bridge left in ${options.pipe}: ${unread.failure.message}`))
      } else if (unread.success.length > 0) push(unread.success)
      generation++
      const partial = framer.end()
      if (partial.length > 0) {
        onFrames(partial)
        options.background(taken("when its bridge exited"))
      }
    }))
  })

  return { push, watch, writerExited }
}
