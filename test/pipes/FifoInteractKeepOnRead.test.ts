/**
 * FifoInteract's keepOnRead: the messages of each read go to `keep` at once,
 * all of one read in one call, before the stream hands them on; reading
 * does not pause however many wait; and at the end of its scope what is
 * still unread in interact_in is taken out of the pipe and kept too.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Exit, Latch, Result, Scope, Stream } from "effect"
import { openWriter, takeUnread } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import type { InboundMessage } from "../../src/ports/Interact.js"
import { tempDir } from "../support/FifoKit.js"

const setup = Effect.gen(function*() {
  const paths = yield* makeRuntimeDir(path.join(yield* tempDir, "run"))
  const interact = yield* InteractFifo.make({ paths })
  const toAgent = yield* openWriter(paths.interactIn)
  // Each call's messages, as given; `given` opens on every call.
  const calls: Array<ReadonlyArray<InboundMessage>> = []
  const given = yield* Latch.make()
  const keeping = yield* Scope.make()
  yield* interact.keepOnRead!((read) => {
    calls.push([...read])
    given.openUnsafe()
  }).pipe(Scope.provide(keeping))
  /** Waits until `count` messages were given in all. */
  const received = (count: number): Effect.Effect<void> =>
    Effect.andThen(given.close, Effect.suspend(() => calls.flat().length >= count ? Effect.void : Effect.andThen(given.await, received(count))))
  return { paths, interact, toAgent, calls, keeping, received }
})

/** One turn of the event loop: a reader with bytes waiting in its pipe has had them by then. */
const loopTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const texts = (calls: ReadonlyArray<ReadonlyArray<InboundMessage>>) => calls.map((read) => read.map((message) => message.text))

describe("FifoInteract, messages kept as they are read", () => {
  it.effect("gives every line of one read in one call, before the stream hands them on (the same messages)", () =>
    Effect.gen(function*() {
      const { calls, interact, toAgent } = yield* setup
      yield* toAgent.write("cli\tone\ncli\ttwo\ncli\tthree\n")
      const [first] = yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)
      expect(texts(calls)).toEqual([["one", "two", "three"]])
      expect(first).toBe(calls[0]![0])
      const rest = yield* interact.messages.pipe(Stream.take(2), Stream.runCollect)
      expect(rest.map((message) => message.text)).toEqual(["two", "three"])
    }))

  it.effect("keeps reading, past the read-ahead limit, while nobody takes from the stream", () =>
    Effect.gen(function*() {
      const { calls, received, toAgent } = yield* setup
      const lines = Array.from({ length: 300 }, (_, i) => `c\t${i}\n`)
      // In writes of their own, so that the reader would have paused at 64 messages.
      for (const line of lines) yield* toAgent.write(line)
      yield* toAgent.write("c\tlast\n")
      yield* received(301)
      expect(calls.flat().map((message) => message.text)).toEqual([...lines.map((_, i) => String(i)), "last"])
    }))

  it.effect("at the end takes what is still unread in the pipe and keeps its whole lines; reading stops", () =>
    Effect.gen(function*() {
      const { calls, interact, keeping, paths, toAgent } = yield* setup
      yield* toAgent.write("cli\tone\n")
      yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)
      // Written and the scope closed with no turn of the event loop between: the reader has not seen them.
      yield* toAgent.write("cli\ttwo\ncli\t\t\ncli\tthree\ncli\tcut sh")
      yield* Scope.close(keeping, Exit.void)
      expect(texts(calls)).toEqual([["one"], ["two", "", "three"]])
      expect(calls[1]![1]).toEqual({ channel: "cli", text: "", cancel: true })
      // A line written after the end stays in the pipe.
      yield* toAgent.write("cli\tafter the end\n")
      yield* loopTurn
      const left = takeUnread(paths.interactIn)
      expect(Result.isSuccess(left) && Buffer.from(left.success).toString()).toBe("cli\tafter the end\n")
      expect(texts(calls)).toEqual([["one"], ["two", "", "three"]])
    }))
})
