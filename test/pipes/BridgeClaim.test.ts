/**
 * One bridge per role (src/pipes/BridgeClaim.ts): the run claims the roles
 * it serves itself as it lays its directory out; a second claim is refused
 * while its holder lives, naming it; a dead holder's claim is taken over; a
 * claim goes with its scope, and the directory the run made goes after the
 * bridges' claims.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as BridgeClaim from "../../src/pipes/BridgeClaim.js"
import { makeRuntimeDir } from "../../src/pipes/RuntimeDir.js"
import { tempDir } from "../support/FifoKit.js"

const deadPid = 2 ** 22 + 12345

describe("bridge claims", () => {
  it.effect("a run claims the roles it serves; another claim of one is refused, of the others taken; all go with their scopes", () =>
    Effect.gen(function*() {
      const runDir = path.join(yield* tempDir, "run")
      const run = yield* Scope.make()
      yield* makeRuntimeDir(runDir, ["interact", "claw"]).pipe(Scope.provide(run))
      expect(fs.readdirSync(runDir).filter((name) => name.endsWith("-bridge.pid")).sort()).toEqual(["claw-bridge.pid", "interact-bridge.pid"])
      expect(fs.readFileSync(path.join(runDir, "interact-bridge.pid"), "utf8")).toBe(`${process.pid}\n`)
      const refused = yield* Effect.flip(Effect.scoped(BridgeClaim.claim(runDir, "interact", process.pid)))
      expect(refused.reason).toBe("in-use")
      expect(refused.message).toBe(
        `the run (pid ${process.pid}) serves the interact pipes of ${runDir} itself, and one bridge per role may: ` +
          "start the run with --bridge none to serve them from a bridge process"
      )
      const bridge = yield* Scope.make()
      yield* BridgeClaim.claim(runDir, "brain", 1).pipe(Scope.provide(bridge))
      const second = yield* Effect.flip(Effect.scoped(BridgeClaim.claim(runDir, "brain", 1)))
      expect(second.message).toContain(`the brain pipes of ${runDir} are served already by another bridge (pid ${process.pid})`)
      yield* Scope.close(bridge, Exit.void)
      expect(fs.existsSync(path.join(runDir, "brain-bridge.pid"))).toBe(false)
      yield* Scope.close(run, Exit.void)
      expect(fs.existsSync(runDir)).toBe(false)
    }))

  it.effect("the claim of a process that is gone is taken over, by a bridge and by a run laying its directory out", () =>
    Effect.gen(function*() {
      const runDir = path.join(yield* tempDir, "run")
      fs.mkdirSync(runDir, { mode: 0o700 })
      fs.writeFileSync(path.join(runDir, "claw-bridge.pid"), `${deadPid}\n`)
      fs.writeFileSync(path.join(runDir, "brain-bridge.pid"), "")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* BridgeClaim.claim(runDir, "claw", undefined)
        expect(fs.readFileSync(path.join(runDir, "claw-bridge.pid"), "utf8")).toBe(`${process.pid}\n`)
      }))
      fs.writeFileSync(path.join(runDir, "claw-bridge.pid"), `${deadPid}\n`)
      yield* Effect.scoped(makeRuntimeDir(runDir, ["interact"]))
      expect(fs.readdirSync(runDir)).toEqual([])
    }))
})
