/**
 * Lines are read straight from the socket's data events; a line too long to
 * hold is refused from there. The refusal still goes out before anything
 * about a line that came after it, and nothing read is lost.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect, Stream } from "effect"
import { openWriter } from "../../src/pipes/PipeEnd.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import * as InteractFifo from "../../src/pipes/FifoInteract.js"
import { linesFrom, takeN, tempDir } from "../support/FifoKit.js"

const setup = Effect.gen(function*() {
  const paths = yield* makeRuntimeDir(path.join(yield* tempDir, "run"))
  const interact = yield* InteractFifo.make({ paths, maxLineBytes: 32 })
  const toAgent = yield* openWriter(paths.interactIn)
  const replies = yield* linesFrom(paths.interactOut)
  return { interact, toAgent, replies }
})

describe("FIFO interact, lines from the data events", () => {
  it.effect("sends the refusal of an oversized line before the agent can answer the line after it", () =>
    Effect.gen(function*() {
      const { interact, replies, toAgent } = yield* setup
      yield* toAgent.write(`big\t${"x".repeat(100)}\nsmall\tafter\n`)
      const [message] = yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)
      expect(message).toEqual({ channel: "small", text: "after" })
      yield* interact.send({ channel: "small", text: "answer" })
      expect(yield* takeN(replies, 2)).toEqual([`big\t${InteractFifo.oversizedReply(32)}`, "small\tanswer"])
    }))

  it.effect("refuses an oversized line to its channel however long the channel, when it ends within the limit", () =>
    Effect.gen(function*() {
      const paths = yield* makeRuntimeDir(path.join(yield* tempDir, "run"))
      const interact = yield* InteractFifo.make({ paths, maxLineBytes: 4096 })
      const toAgent = yield* openWriter(paths.interactIn)
      const replies = yield* linesFrom(paths.interactOut)
      // Longer than the start of a line kept for any other purpose (Framing.headBytes).
      const channel = "c".repeat(2000)
      yield* toAgent.write(`${channel}\t${"x".repeat(5000)}\n${channel}\tafter\n`)
      const [message] = yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)
      expect(message).toEqual({ channel, text: "after" })
      expect(yield* takeN(replies, 1)).toEqual([`${channel}\t${InteractFifo.oversizedReply(4096)}`])
    }))

  it.effect("answers no channel for an oversized line whose channel is not valid UTF-8, as for any line: a reply could not name it", () =>
    Effect.gen(function*() {
      const { interact, replies, toAgent } = yield* setup
      yield* toAgent.write(Buffer.concat([Buffer.from([0xff]), Buffer.from(`big\t${"x".repeat(100)}\nsmall\tafter\n`)]))
      const [message] = yield* interact.messages.pipe(Stream.take(1), Stream.runCollect)
      expect(message).toEqual({ channel: "small", text: "after" })
      yield* interact.send({ channel: "small", text: "answer" })
      // The refusal would have gone first, to a channel "\uFFFDbig" no bridge knows.
      expect(yield* takeN(replies, 1)).toEqual(["small\tanswer"])
    }))

  it.effect("hands over every line of a burst larger than its read-ahead, in order, to consumers one after another", () =>
    Effect.gen(function*() {
      const { interact, toAgent } = yield* setup
      const lines = Array.from({ length: 300 }, (_, i) => `c\t${i}\n`).join("")
      yield* toAgent.write(lines)
      const first = yield* interact.messages.pipe(Stream.take(100), Stream.runCollect)
      const rest = yield* interact.messages.pipe(Stream.take(200), Stream.runCollect)
      expect([...first, ...rest].map((message) => message.text)).toEqual(Array.from({ length: 300 }, (_, i) => String(i)))
    }))
})
