/**
 * A lock file is created, then written: a process killed in between leaves
 * it empty. `hold` (the run lock, the compaction lock) waits on an empty
 * lock until it is old enough to be a killed creator's, then takes it over,
 * instead of refusing the next start with "another run (pid NaN)".
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Result, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as FileLock from "../../src/memory/FileLock.js"
import { tempDir } from "../support/Sandbox.js"

const written = new Date("2026-01-01T00:00:00Z")

describe("FileLock.hold", () => {
  it.effect("an empty lock (its creator killed while writing it) is waited on, then taken over once a second old", () =>
    Effect.gen(function*() {
      const lock = path.join(yield* tempDir(), ".planckclaw-run.lock")
      fs.writeFileSync(lock, "")
      fs.utimesSync(lock, written, written)
      yield* TestClock.setTime(written.getTime() + 200)
      const held = yield* Effect.forkChild(FileLock.hold(lock))
      // Still young: waited on, not refused.
      yield* TestClock.adjust(Duration.millis(500))
      expect(held.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(Duration.millis(500))
      expect(Exit.isSuccess(yield* Fiber.await(held))).toBe(true)
      expect(fs.readFileSync(lock, "utf8")).toBe(`${process.pid}\n`)
    }))

  it.effect("a lock naming a live process is refused at once, with its pid", () =>
    Effect.gen(function*() {
      const lock = path.join(yield* tempDir(), ".planckclaw-run.lock")
      // The parent (the test runner's) is alive, and not this process.
      fs.writeFileSync(lock, `${process.ppid}\n`)
      yield* TestClock.setTime(Date.now())
      const taken = yield* Effect.result(Effect.scoped(FileLock.hold(lock)))
      expect(Result.isFailure(taken) && taken.failure._tag === "LockHeld" ? taken.failure.ownerPid : undefined).toBe(process.ppid)
      expect(fs.readFileSync(lock, "utf8")).toBe(`${process.ppid}\n`)
    }))
})
