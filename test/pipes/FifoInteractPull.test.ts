/**
 * The FIFO interact's message stream, pulled as Intake reads it (one pull at
 * a time, here through `Stream.toPull`; before, Intake took the adapter's own
 * pull, DirectPull, past the stream): one message per pull, in order, shared
 * by every run of the stream (nothing lost between two), and a pull
 * interrupted while it waits takes nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Fiber, Stream } from "effect"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import { sh, tempDir } from "../support/FifoKit.js"

const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const paths = yield* makeRuntimeDir(path.join(dir, "run"))
  const interact = yield* InteractFifo.make({ paths })
  const pull = yield* Stream.toPull(interact.messages)
  return { paths, interact, pull }
})

describe("FifoInteract's message stream, pulled", () => {
  it.effect("pulls one message at a time, in order, and waits for the next", () =>
    Effect.gen(function*() {
      const { interact, paths, pull } = yield* setup
      yield* sh(`printf 'cli\\tone\\ncli\\ttwo\\n' > "$P"`, { P: paths.interactIn })
      expect(yield* pull).toEqual([{ channel: "cli", text: "one" }])
      // Every run of the stream takes from one inbox: another run goes on where the pull stopped.
      const viaStream = yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)
      expect(viaStream).toEqual([{ channel: "cli", text: "two" }])
      const waiting = yield* Effect.forkChild(pull)
      yield* sh(`printf '7\\tthree\\\\nlines\\n' > "$P"`, { P: paths.interactIn })
      expect(yield* Fiber.join(waiting)).toEqual([{ channel: "7", text: "three\nlines" }])
    }))

  it.effect("a pull interrupted while waiting takes nothing: the next pull gets the line", () =>
    Effect.gen(function*() {
      const { paths, pull } = yield* setup
      const gaveUp = yield* Effect.forkChild(pull)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(gaveUp)
      yield* sh(`printf 'cli\\tafter\\n' > "$P"`, { P: paths.interactIn })
      expect(yield* pull).toEqual([{ channel: "cli", text: "after" }])
    }))

  it.effect("gives what a whole run of the stream gives, message for message", () =>
    Effect.gen(function*() {
      const { interact, paths, pull } = yield* setup
      const lines = Array.from({ length: 20 }, (_, i) => `c${i % 3}\\tmessage ${i}\\n`).join("")
      yield* sh(`printf '${lines}' > "$P"; printf '${lines}' > "$P"`, { P: paths.interactIn })
      const pulled = []
      for (let i = 0; i < 20; i++) pulled.push(...yield* pull)
      const streamed = yield* interact.messages.pipe(Stream.take(20), Stream.runCollect)
      expect(pulled).toEqual(streamed)
      expect(pulled.map((message) => message.text)).toEqual(Array.from({ length: 20 }, (_, i) => `message ${i}`))
    }))
})
