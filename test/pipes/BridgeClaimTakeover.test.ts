/**
 * The claim of a dead bridge is taken over one claimant at a time
 * (src/pipes/ClaimGuard.ts): of two bridges that both found it dead, one
 * serves the role and the other is refused naming it; a run clearing dead
 * claims as it lays its directory out leaves alone the one a bridge is
 * taking over at that instant; a claim holding no pid is taken over.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as BridgeClaim from "../../src/pipes/BridgeClaim.js"
import { tempDir } from "../support/FifoKit.js"
import { awaitPendingSleep } from "../support/TestClockWait.js"
import { deadPid, otherProcess, otherTakesOverAfterFirstRead } from "./TakeoverKit.js"

const claimIn = (content: string) =>
  Effect.gen(function*() {
    const runDir = yield* tempDir
    const file = path.join(runDir, BridgeClaim.claimFileName("claw"))
    fs.writeFileSync(file, content)
    return { runDir, file, guard: `${file}.takeover` }
  })

describe("a dead bridge's claim", () => {
  it.effect("of two bridges that found it dead, one serves the role and the other is refused naming it", () =>
    Effect.gen(function*() {
      const { file, guard, runDir } = yield* claimIn(`${yield* deadPid}\n`)
      const other = yield* otherProcess
      const race = yield* otherTakesOverAfterFirstRead(file, other)
      const ours = yield* Effect.flip(Effect.scoped(BridgeClaim.claim(runDir, "claw", undefined)))
      expect(race).toEqual({ raced: true, otherHolds: true })
      expect(ours.reason).toBe("in-use")
      expect(ours.message).toBe(
        `the claw pipes of ${runDir} are served already by another bridge (pid ${other}), and one bridge per role may: ` +
          "stop that one first"
      )
      expect(fs.readFileSync(file, "utf8")).toBe(`${other}\n`)
      expect(fs.existsSync(guard)).toBe(false)
    }))

  it.effect("a run clearing dead claims leaves the one a bridge is taking over at that instant to whoever holds it", () =>
    Effect.gen(function*() {
      const { file, guard, runDir } = yield* claimIn(`${yield* deadPid}\n`)
      const other = yield* otherProcess
      const race = yield* otherTakesOverAfterFirstRead(file, other)
      yield* BridgeClaim.clearDead(runDir)
      expect(race.raced).toBe(true)
      // The bridge found the run judging the claim and kept off it, or took it over and keeps it.
      expect(fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "removed").toBe(race.otherHolds ? `${other}\n` : "removed")
      expect(fs.existsSync(guard)).toBe(false)
    }))

  it.effect("while another live bridge is taking it over, a claim waits, then is refused naming that bridge", () =>
    Effect.gen(function*() {
      const { file, guard, runDir } = yield* claimIn(`${yield* deadPid}\n`)
      const other = yield* otherProcess
      fs.writeFileSync(guard, `${other}\n`)
      const claiming = yield* Effect.forkChild(Effect.flip(Effect.scoped(BridgeClaim.claim(runDir, "claw", undefined))))
      yield* awaitPendingSleep(20)
      yield* TestClock.adjust("2 seconds")
      const refused = yield* Fiber.join(claiming)
      expect(refused.message).toContain(`the claw pipes of ${runDir} are served already by another bridge (pid ${other})`)
      expect([fs.readFileSync(guard, "utf8"), fs.existsSync(file)]).toEqual([`${other}\n`, true])
      // A run laying the directory out does not wait on it, and leaves it.
      yield* BridgeClaim.clearDead(runDir)
      expect(fs.existsSync(file)).toBe(true)
    }))

  it.effect("a claim holding no pid, or left by a takeover cut short by a kill, is taken over", () =>
    Effect.gen(function*() {
      for (const content of ["", "not a pid\n", "0\n"]) {
        const { file, guard, runDir } = yield* claimIn(content)
        fs.writeFileSync(guard, `${yield* deadPid}\n`)
        yield* Effect.scoped(Effect.andThen(
          BridgeClaim.claim(runDir, "claw", undefined),
          Effect.sync(() => expect([fs.readFileSync(file, "utf8"), fs.existsSync(guard)]).toEqual([`${process.pid}\n`, false]))
        ))
        expect(fs.readdirSync(runDir)).toEqual([])
      }
    }))
})
