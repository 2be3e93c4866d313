/**
 * The pid file of a dead run is taken over one start at a time
 * (src/pipes/ClaimGuard.ts): of two starts that both found it dead, one
 * takes the runtime directory and the other is refused naming it; a start
 * cut short by a kill (its takeover guard, or an empty pid file, left
 * behind) does not keep the directory from being used.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { makeRuntimeDir, pidFileName } from "../../src/pipes/RuntimeDir.js"
import { tempDir } from "../support/FifoKit.js"
import { awaitPendingSleep } from "../support/TestClockWait.js"
import { deadPid, otherProcess, otherTakesOverAfterFirstRead } from "./TakeoverKit.js"

const runDirWith = (content: string) =>
  Effect.gen(function*() {
    const runDir = yield* tempDir
    const pidFile = path.join(runDir, pidFileName)
    fs.writeFileSync(pidFile, content)
    return { runDir, pidFile, guard: `${pidFile}.takeover` }
  })

describe("a dead run's pid file", () => {
  it.effect("of two starts that found it dead, one takes the directory and the other is refused naming it", () =>
    Effect.gen(function*() {
      const { guard, pidFile, runDir } = yield* runDirWith(`${yield* deadPid}\n`)
      const other = yield* otherProcess
      const race = yield* otherTakesOverAfterFirstRead(pidFile, other)
      const ours = yield* Effect.flip(Effect.scoped(makeRuntimeDir(runDir)))
      expect(race).toEqual({ raced: true, otherHolds: true })
      expect(ours.reason).toBe("in-use")
      expect(ours.pid).toBe(other)
      expect(ours.message).toContain(`runtime directory ${runDir} is in use by a live run (pid ${other})`)
      expect(fs.readFileSync(pidFile, "utf8")).toBe(`${other}\n`)
      expect(fs.existsSync(guard)).toBe(false)
    }))

  it.effect("while another live start is taking it over, a start waits, then is refused naming that start", () =>
    Effect.gen(function*() {
      const { guard, pidFile, runDir } = yield* runDirWith(`${yield* deadPid}\n`)
      const other = yield* otherProcess
      fs.writeFileSync(guard, `${other}\n`)
      const start = yield* Effect.forkChild(Effect.flip(Effect.scoped(makeRuntimeDir(runDir))))
      yield* awaitPendingSleep(20)
      yield* TestClock.adjust("2 seconds")
      const refused = yield* Fiber.join(start)
      expect(refused.reason).toBe("in-use")
      expect(refused.message).toBe(
        `runtime directory ${runDir} was claimed by another run starting at the same time (pid ${other}); ` +
          "stop it or choose another PLANCKCLAW_RUN_DIR"
      )
      // Neither the other's guard nor the file it is taking over was touched.
      expect([fs.readFileSync(guard, "utf8"), fs.existsSync(pidFile)]).toEqual([`${other}\n`, true])
    }))

  it.effect("a takeover cut short by a kill (its guard, and the guard of that guard, left behind) keeps nobody out", () =>
    Effect.gen(function*() {
      const { guard, pidFile, runDir } = yield* runDirWith(`${yield* deadPid}\n`)
      fs.writeFileSync(guard, `${yield* deadPid}\n`)
      // And a start killed while removing that guard (under its own guard).
      fs.writeFileSync(`${guard}.takeover`, `${yield* deadPid}\n`)
      yield* Effect.scoped(Effect.gen(function*() {
        yield* makeRuntimeDir(runDir)
        expect(fs.readFileSync(pidFile, "utf8")).toBe(`${process.pid}\n`)
        expect(fs.existsSync(guard)).toBe(false)
      }))
      expect(fs.readdirSync(runDir)).toEqual([])
    }))

  it.effect("of two starts that both found a killed start's guard stale, the one that replaced it first keeps it", () =>
    Effect.gen(function*() {
      const { guard, runDir } = yield* runDirWith(`${yield* deadPid}\n`)
      fs.writeFileSync(guard, `${yield* deadPid}\n`)
      const other = yield* otherProcess
      // Right after this start read the dead taker in the guard, the other
      // start (which found it dead too) replaces it with its own and is inside.
      const race = yield* otherTakesOverAfterFirstRead(guard, other)
      const start = yield* Effect.forkChild(Effect.flip(Effect.scoped(makeRuntimeDir(runDir))))
      yield* awaitPendingSleep(20)
      yield* TestClock.adjust("2 seconds")
      const refused = yield* Fiber.join(start)
      expect(race).toEqual({ raced: true, otherHolds: true })
      expect(refused.reason).toBe("in-use")
      expect(refused.pid).toBe(other)
      // The other's guard, and the pid file it is replacing, are untouched.
      expect(fs.readFileSync(guard, "utf8")).toBe(`${other}\n`)
      expect(fs.readdirSync(runDir).sort()).toEqual([pidFileName, `${pidFileName}.takeover`])
    }))

  it.effect("a guard left empty by a start killed while writing it holds a start back for a second, no longer", () =>
    Effect.gen(function*() {
      const { guard, pidFile, runDir } = yield* runDirWith("")
      fs.writeFileSync(guard, "")
      yield* TestClock.setTime(fs.lstatSync(guard).mtimeMs)
      const start = yield* Effect.forkChild(Effect.exit(Effect.scoped(Effect.andThen(
        makeRuntimeDir(runDir),
        Effect.sync(() => fs.readFileSync(pidFile, "utf8"))
      ))))
      yield* awaitPendingSleep(fs.lstatSync(guard).mtimeMs + 20)
      yield* TestClock.adjust("1100 millis")
      expect(yield* Fiber.join(start)).toEqual(Exit.succeed(`${process.pid}\n`))
      expect(fs.readdirSync(runDir)).toEqual([])
    }))

  it.effect("an empty pid file (a start killed while writing it) is replaced; one holding no pid is refused, named", () =>
    Effect.gen(function*() {
      const empty = yield* runDirWith("")
      yield* Effect.scoped(Effect.andThen(
        makeRuntimeDir(empty.runDir),
        Effect.sync(() => expect(fs.readFileSync(empty.pidFile, "utf8")).toBe(`${process.pid}\n`))
      ))
      for (const garbage of ["not a pid\n", "0\n", "-7\n", "12ab"]) {
        const foreign = yield* runDirWith(garbage)
        const refused = yield* Effect.flip(Effect.scoped(makeRuntimeDir(foreign.runDir)))
        expect(refused.reason).toBe("foreign-entry")
        expect(refused.message).toBe(
          `${foreign.pidFile} does not hold a pid, so planckclaw did not write it: remove it or choose another PLANCKCLAW_RUN_DIR`
        )
        expect(fs.readdirSync(foreign.runDir)).toEqual([pidFileName])
      }
    }))
})
