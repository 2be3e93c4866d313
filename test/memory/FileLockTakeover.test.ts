/**
 * A stale lock (its owner dead) is taken over one process at a time: two
 * processes that both found it stale must not both end up holding it,
 * and a takeover cut short by a kill does not block the lock for good.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as FileLock from "../../src/memory/FileLock.js"
import { patchFs } from "../support/PatchedFs.js"
import { tempDir } from "../support/Sandbox.js"
import { otherTakesOverAfterFirstRead } from "../pipes/TakeoverKit.js"

/** The pid of a process that has exited: a lock naming it is stale. */
const deadPid = Effect.callback<number>((resume) => {
  const gone = child.spawn("true", [], { stdio: "ignore" })
  gone.once("exit", () => resume(Effect.succeed(gone.pid!)))
})

/** A live process that is not us: standing for another planckclaw. */
const otherProcess = Effect.acquireRelease(
  Effect.sync(() => child.spawn("sleep", ["60"], { stdio: "ignore" })),
  (process) => Effect.sync(() => process.kill("SIGKILL"))
)

const lockIn = Effect.map(tempDir(), (directory) => path.join(directory, ".planckclaw-run.lock"))

describe("taking over a stale lock", () => {
  it.effect("another process that took it over between this one's look and its removal keeps it", () =>
    Effect.gen(function*() {
      const lock = yield* lockIn
      fs.symlinkSync(String(yield* deadPid), lock)
      const other = yield* otherProcess
      // Right after this process read the dead owner, the other process (which
      // found it dead too) removes the stale lock and takes its own.
      let raced = false
      yield* patchFs("readlinkSync", (real) =>
        ((target: fs.PathLike, ...rest: Array<any>) => {
          const read = (real as any)(target, ...rest)
          if (!raced && String(target) === lock) {
            raced = true
            fs.unlinkSync(lock)
            fs.symlinkSync(String(other.pid), lock)
          }
          return read
        }) as typeof fs.readlinkSync)
      const taken = FileLock.tryTakeSync(lock)
      expect(raced).toBe(true)
      expect(Result.isFailure(taken) && taken.failure._tag === "LockHeld" && taken.failure.ownerPid).toBe(other.pid)
      expect(fs.readlinkSync(lock)).toBe(String(other.pid))
      expect(fs.existsSync(`${lock}.takeover`)).toBe(false)
    }))

  it.effect("while another live process is taking it over, the lock reads as being written", () =>
    Effect.gen(function*() {
      const lock = yield* lockIn
      fs.symlinkSync(String(yield* deadPid), lock)
      const other = yield* otherProcess
      fs.symlinkSync(String(other.pid), `${lock}.takeover`)
      const taken = FileLock.tryTakeSync(lock)
      expect(Result.isFailure(taken) && taken.failure._tag === "LockHeld" && Number.isNaN(taken.failure.ownerPid)).toBe(true)
      // Neither the stale lock nor the other's guard was touched (links to pids: lstat, not exists).
      expect([fs.readlinkSync(lock), fs.readlinkSync(`${lock}.takeover`)]).toEqual([expect.any(String), String(other.pid)])
    }))

  it.effect("of two processes that both found a killed taker's guard stale, the one that replaced it first keeps it", () =>
    Effect.gen(function*() {
      const lock = yield* lockIn
      const guard = `${lock}.takeover`
      fs.writeFileSync(lock, `${yield* deadPid}\n`)
      fs.writeFileSync(guard, `${yield* deadPid}\n`)
      const other = yield* otherProcess
      // Right after this process read the dead taker in the guard, the other
      // (which found it dead too) replaces it with its own and is inside.
      const race = yield* otherTakesOverAfterFirstRead(guard, other.pid!)
      const taken = FileLock.tryTakeSync(lock)
      expect(race).toEqual({ raced: true, otherHolds: true })
      expect(Result.isFailure(taken) && taken.failure._tag === "LockHeld" && Number.isNaN(taken.failure.ownerPid)).toBe(true)
      expect(fs.readFileSync(guard, "utf8")).toBe(`${other.pid}\n`)
      expect(fs.existsSync(lock)).toBe(true)
    }))

  it.effect("a takeover cut short by a kill (its guard left behind) does not keep the lock from being taken", () =>
    Effect.gen(function*() {
      const lock = yield* lockIn
      fs.writeFileSync(lock, `${yield* deadPid}\n`)
      fs.writeFileSync(`${lock}.takeover`, `${yield* deadPid}\n`)
      // And one killed while removing that guard (under its own guard), on a full disk.
      fs.symlinkSync(String(yield* deadPid), `${lock}.takeover.takeover`)
      const taken = FileLock.tryTakeSync(lock)
      expect(Result.isSuccess(taken)).toBe(true)
      expect(fs.readdirSync(path.dirname(lock))).toEqual([path.basename(lock)])
      expect(fs.readFileSync(lock, "utf8").trim()).toBe(String(process.pid))
      expect(fs.existsSync(`${lock}.takeover`)).toBe(false)
      FileLock.releaseSync(lock)
      expect(fs.existsSync(lock)).toBe(false)
    }))

  it.effect("takeover guards nested deeper than any run of kills could leave them are refused, named", () =>
    Effect.gen(function*() {
      const lock = yield* lockIn
      fs.writeFileSync(lock, `${yield* deadPid}\n`)
      const dead = yield* deadPid
      for (let level = 1; level <= 5; level++) fs.writeFileSync(lock + ".takeover".repeat(level), `${dead}\n`)
      const taken = FileLock.tryTakeSync(lock)
      const deepest = lock + ".takeover".repeat(5)
      expect(Result.isFailure(taken) && taken.failure._tag === "LockFailed" && taken.failure.message).toBe(
        `takeover guards left by killed takers are nested more than 4 deep; remove ${deepest} and its .takeover files`
      )
    }))
})
