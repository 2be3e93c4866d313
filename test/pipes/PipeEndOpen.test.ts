/**
 * A FIFO end opens without the thread pool: the non-blocking open and the
 * fstat are synchronous (they never wait), so a run's twelve pipe ends do
 * not start the pool and wait a trip each at start-up. Failures read as before.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Exit, Scope } from "effect"
import { openReader, openWriter } from "../../src/pipes/PipeEnd.js"
import { mkfifo, tempDir } from "../support/FifoKit.js"

describe("opening a FIFO end", () => {
  it.effect("is done without a turn of the event loop, for a reader and a writer", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "pipe")
      yield* mkfifo(file)
      const scope = yield* Effect.scope
      // runSync fails on anything asynchronous: the ends must be open when it returns.
      const opened = Effect.runSyncExit(Scope.provide(Effect.all([openReader(file), openWriter(file)]), scope))
      expect(Exit.isSuccess(opened)).toBe(true)
    }))

  it.effect("fails with the path and the reason for a missing file or one that is no FIFO", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const missing = yield* Effect.flip(openWriter(path.join(dir, "absent")))
      expect(missing.message).toMatch(/^cannot open FIFO .*absent: ENOENT/)
      const plain = path.join(dir, "plain")
      fs.writeFileSync(plain, "")
      const notFifo = yield* Effect.flip(openReader(plain))
      expect(notFifo.message).toBe(`${plain} is not a named pipe`)
    }))
})
