/**
 * A lock file is created, then written: a process killed in between leaves
 * it empty. `hold` (the run lock, the compaction lock) waits on an empty
 * lock until it is old enough to be a killed creator's, then takes it over,
 * instead of refusing the next start with "another run (pid NaN)".
 */
import * as fs from "node:fs"
import * as os from "node:os"
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

describe("FileLock: a lock this process holds", () => {
  const kinds: ReadonlyArray<[string, (dir: string) => FileLock.TakeOptions]> = [
    ["a file naming the pid", () => ({})],
    ["a symbolic link to the pid", () => ({ link: true })],
    ["a hard link to the owner file", (dir) => {
      const owner = path.join(dir, `.planckclaw-owner-${process.pid}`)
      fs.writeFileSync(owner, `${process.pid}\n`)
      return { ownerFile: owner }
    }]
  ]
  for (const [kind, options] of kinds) {
    it.effect(`is never taken over as stale by the same process (${kind}); free again once released`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir()
        const lock = path.join(dir, ".planckclaw-write.lock")
        const taken = FileLock.tryTakeSync(lock, options(dir))
        expect(Result.isSuccess(taken)).toBe(true)
        const inode = fs.lstatSync(lock).ino
        // A second taker in this process (another store on the same directory) is refused, naming this process.
        const again = FileLock.tryTakeSync(lock, options(dir))
        expect(Result.isFailure(again) && again.failure._tag === "LockHeld" ? again.failure.ownerPid : "taken").toBe(process.pid)
        expect(fs.lstatSync(lock).ino).toBe(inode)
        // hold refuses too; holdWaiting waits for the release instead of taking it (TestClock).
        const held = yield* Effect.result(Effect.scoped(FileLock.hold(lock, options(dir))))
        expect(Result.isFailure(held) && held.failure._tag === "LockHeld").toBe(true)
        const waiting = yield* Effect.forkChild(Effect.scoped(FileLock.holdWaiting(lock)))
        yield* TestClock.adjust(Duration.millis(50))
        expect(waiting.pollUnsafe()).toBeUndefined()
        expect(fs.lstatSync(lock).ino).toBe(inode)
        FileLock.releaseSync(lock)
        yield* TestClock.adjust(Duration.millis(10))
        expect(Exit.isSuccess(yield* Fiber.await(waiting))).toBe(true)
        expect(Result.isSuccess(FileLock.tryTakeSync(lock, options(dir)))).toBe(true)
        FileLock.releaseSync(lock, true)
      }))
  }

  it("a lock naming this pid that this process does not hold (an earlier process had the pid) is taken over", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-lock-"))
    const lock = path.join(dir, ".planckclaw-run.lock")
    fs.writeFileSync(lock, `${process.pid}\n`)
    const taken = FileLock.tryTakeSync(lock)
    expect(Result.isSuccess(taken) && !taken.success.clean).toBe(true)
    FileLock.releaseSync(lock, true)
    expect(fs.existsSync(lock)).toBe(false)
  })
})
