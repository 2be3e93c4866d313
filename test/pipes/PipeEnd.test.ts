import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Deferred, Effect, Exit } from "effect"
import { listenReader, openWriter } from "../../src/pipes/PipeEnd.js"
import { mkfifo, sh, tempDir } from "../support/FifoKit.js"

const fifo = Effect.gen(function*() {
  const file = path.join(yield* tempDir, "pipe")
  yield* mkfifo(file)
  return file
})

describe("FIFO pipe ends", () => {
  it.effect("complete a write the kernel took whole at once, without waiting for the next tick", () =>
    Effect.gen(function*() {
      const writer = yield* openWriter(yield* fifo)
      // runSync fails on anything asynchronous: the write must be done when it returns.
      expect(Exit.isSuccess(Effect.runSyncExit(writer.write("fits in the pipe\n")))).toBe(true)
    }))

  it.effect("hold a paused reader's chunks until its valve opens, and lose none", () =>
    Effect.gen(function*() {
      const file = yield* fifo
      const chunks: Array<string> = []
      const arrived = yield* Deferred.make<void>()
      const valve = yield* listenReader(file, {
        onChunk: (chunk) => {
          chunks.push(Buffer.from(chunk).toString())
          if (chunks.join("").endsWith("two\n")) Deferred.doneUnsafe(arrived, Exit.void)
        },
        onFailure: (error) => Deferred.doneUnsafe(arrived, Exit.die(error))
      }, { paused: true })
      yield* sh(`printf 'one\\n' > "$P"; printf 'two\\n' > "$P"`, { P: file })
      // A child process started and ended after the writes: time enough for a flowing reader.
      yield* sh("true")
      expect(chunks).toEqual([])
      valve.resume()
      yield* Deferred.await(arrived)
      expect(chunks.join("")).toBe("one\ntwo\n")
    }))
})
