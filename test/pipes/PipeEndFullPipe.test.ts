/**
 * A write into a FIFO with no room completes only once a reader took its
 * bytes (the fast path for a write the kernel took whole must not cut it
 * short), and writes still go out whole and in call order.
 */
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { listenReader, openWriter } from "../../src/pipes/PipeEnd.js"
import { mkfifo, tempDir } from "../support/FifoKit.js"

describe("FIFO pipe ends with a full pipe", () => {
  it.effect("a write larger than the pipe holds waits for a reader, and every byte arrives in order", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "pipe")
      yield* mkfifo(file)
      const writer = yield* openWriter(file)
      // Four times a default pipe's 64 KiB, then a short write behind it.
      const big = "x".repeat(4 * 65536)
      const writing = yield* Effect.forkChild(Effect.andThen(writer.write(big), writer.write("tail\n")))
      // Nothing reads yet: the big write cannot have completed.
      yield* Effect.yieldNow
      expect(writing.pollUnsafe()).toBeUndefined()
      let received = ""
      const all = yield* Deferred.make<void>()
      const valve = yield* listenReader(file, {
        onChunk: (chunk) => {
          received += Buffer.from(chunk).toString()
          if (received.endsWith("tail\n")) Deferred.doneUnsafe(all, Exit.void)
        },
        onFailure: (error) => Deferred.doneUnsafe(all, Exit.die(error))
      })
      valve.resume()
      yield* Deferred.await(all)
      yield* Fiber.join(writing)
      expect(received).toBe(`${big}tail\n`)
    }))
})
