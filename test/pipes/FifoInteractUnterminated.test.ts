/**
 * A line on interact_in whose writer closed without its newline is taken as
 * a whole line once nothing more came for `unterminatedWait` while the pipe
 * was read (TestClock), so the next writer's line, maybe from another
 * channel, is not glued to it; while the reader is paused (the agent has
 * enough waiting), the rest of the line is in the pipe and nothing is cut.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Duration, Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import { sh, tempDir } from "../support/FifoKit.js"
import { advanceTo, pendingSleeps, yieldToEventLoop } from "../support/TestClockWait.js"

const wait = Duration.toMillis(InteractFifo.unterminatedWait)

const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const paths = yield* makeRuntimeDir(path.join(dir, "run"))
  const interact = yield* InteractFifo.make({ paths })
  return { write: (text: string) => sh(`printf '%b' "$T" > "$P"`, { P: paths.interactIn, T: text }), interact }
})

describe("FIFO interact, a line without its newline", () => {
  it.effect("is a whole line once nothing more came for the wait: the next writer's line stays its own", () =>
    Effect.gen(function*() {
      const { interact, write } = yield* setup
      const taking = yield* Effect.forkChild(interact.messages.pipe(Stream.take(2), Stream.runCollect))
      yield* write("alice\\thello")
      // Asleep once the piece was read: only then does the wait start.
      yield* advanceTo(wait)
      yield* write("bob\\tmy secret\\n")
      expect(yield* Fiber.join(taking)).toEqual([
        { channel: "alice", text: "hello" },
        { channel: "bob", text: "my secret" }
      ])
    }))

  it.effect("is not cut while the reader is paused: the rest, written later, completes it", () =>
    Effect.gen(function*() {
      const { interact, write } = yield* setup
      // 65 lines and a piece in one write: the reader takes them at once and pauses with 64 waiting.
      const lines = Array.from({ length: 65 }, (_, n) => `c\\tm${n}\\n`).join("")
      const first = yield* Effect.forkChild(interact.messages.pipe(Stream.take(1), Stream.runCollect))
      yield* write(`${lines}carol\\twor`)
      expect(yield* Fiber.join(first)).toEqual([{ channel: "c", text: "m0" }])
      for (let turn = 0; turn < 20; turn++) yield* yieldToEventLoop
      expect(yield* pendingSleeps).toEqual([])
      yield* TestClock.adjust(Duration.times(InteractFifo.unterminatedWait, 5))
      const rest = yield* Effect.forkChild(interact.messages.pipe(Stream.take(65), Stream.runCollect))
      yield* write("ld\\n")
      const taken = yield* Fiber.join(rest)
      expect(taken.slice(0, 64).map((message) => message.text)).toEqual(Array.from({ length: 64 }, (_, n) => `m${n + 1}`))
      expect(taken[64]).toEqual({ channel: "carol", text: "world" })
    }))
})
