/**
 * The run's quicker V8 warm-up: the budget lowered when serving starts, set
 * back to V8's default once the process has used its CPU allowance or after
 * ten minutes (TestClock, a CPU reading the test moves), the watcher gone
 * with the serving; left alone when the setting says so or node was given
 * its own budget; flags this Node's V8 accepts. The built run applying it:
 * V8Flags.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { ConfigProvider, Deferred, Duration, Effect, Result, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import * as EarlyTierUp from "../../../src/runtime/process/EarlyTierUp.js"

const fromMap = (entries: Record<string, string>) => ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(entries))), { preserveEmptyStrings: true })

/** Probes that record the flags set, with a CPU reading the test sets. */
const recording = (execArgv: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const flags: Array<string> = []
    const cpu = yield* Ref.make(Duration.zero)
    const probes: EarlyTierUp.Probes = {
      setFlags: (set) => Effect.sync(() => void flags.push(set)),
      cpuUsed: Ref.get(cpu),
      execArgv
    }
    return { flags, cpu, probes }
  })

// Opted in unless a test says otherwise: V8's own pace is the default.
const choose = (probes: EarlyTierUp.Probes, settings: Record<string, string> = { PLANCKCLAW_V8_EARLY_TIER_UP: "1" }) =>
  Effect.provideService(EarlyTierUp.readChoice(probes), ConfigProvider.ConfigProvider, fromMap(settings))

describe("EarlyTierUp", () => {
  it.effect("lowers V8's budget as serving starts and sets the default back once 2.5 s of CPU are used", () =>
    Effect.gen(function*() {
      const { cpu, flags, probes } = yield* recording()
      const during = yield* choose(probes)
      // Reading the setting changes nothing.
      expect(flags).toEqual([])
      const stop = yield* Deferred.make<string>()
      const serving = yield* Effect.forkChild(during(Deferred.await(stop)))
      yield* TestClock.adjust(0)
      expect(flags).toEqual([EarlyTierUp.youngFlag])
      yield* Ref.set(cpu, Duration.seconds(2))
      yield* TestClock.adjust(EarlyTierUp.checkEvery)
      expect(flags).toEqual([EarlyTierUp.youngFlag])
      yield* Ref.set(cpu, EarlyTierUp.grownUpCpu)
      yield* TestClock.adjust(EarlyTierUp.checkEvery)
      expect(flags).toEqual([EarlyTierUp.youngFlag, EarlyTierUp.defaultFlag])
      // Once only, and serving goes on and gives its result.
      yield* TestClock.adjust(Duration.minutes(30))
      expect(flags).toEqual([EarlyTierUp.youngFlag, EarlyTierUp.defaultFlag])
      yield* Deferred.succeed(stop, "served")
      expect(yield* Fiber.join(serving)).toBe("served")
    }))

  it.effect("sets the default back after ten minutes when the process stays below the CPU allowance", () =>
    Effect.gen(function*() {
      const { flags, probes } = yield* recording()
      const serving = yield* Effect.forkChild((yield* choose(probes))(Effect.never))
      yield* TestClock.adjust(Duration.subtract(EarlyTierUp.youngFor, EarlyTierUp.checkEvery))
      expect(flags).toEqual([EarlyTierUp.youngFlag])
      yield* TestClock.adjust(Duration.sum(EarlyTierUp.checkEvery, EarlyTierUp.checkEvery))
      expect(flags).toEqual([EarlyTierUp.youngFlag, EarlyTierUp.defaultFlag])
      yield* Fiber.interrupt(serving)
    }))

  it.effect("the watcher ends with the serving: nothing is set afterwards", () =>
    Effect.gen(function*() {
      const { flags, probes } = yield* recording()
      expect(yield* (yield* choose(probes))(Effect.succeed(42))).toBe(42)
      yield* TestClock.adjust(Duration.hours(1))
      expect(flags).toEqual([EarlyTierUp.youngFlag])
      // A failing serving fails as it would have.
      const failed = yield* Effect.result((yield* choose(probes))(Effect.fail("no")))
      expect(failed).toEqual(Result.fail("no"))
    }))

  it.effect("leaves V8 alone by default, with PLANCKCLAW_V8_EARLY_TIER_UP=0, or when node was given its own --invocation-count-for-turbofan", () =>
    Effect.gen(function*() {
      for (
        const [settings, execArgv] of [
          [{}, []],
          [{ PLANCKCLAW_V8_EARLY_TIER_UP: "0" }, []],
          [{ PLANCKCLAW_V8_EARLY_TIER_UP: "1" }, ["--invocation-count-for-turbofan=1000"]]
        ] as const
      ) {
        const { flags, probes } = yield* recording(execArgv)
        expect(yield* (yield* choose(probes, settings))(Effect.succeed("as is"))).toBe("as is")
        yield* TestClock.adjust(Duration.hours(1))
        expect(flags).toEqual([])
      }
      const { flags, probes } = yield* recording(["--max-old-space-size=100"])
      yield* (yield* choose(probes, { PLANCKCLAW_V8_EARLY_TIER_UP: "true" }))(Effect.void)
      expect(flags).toEqual([EarlyTierUp.youngFlag])
    }))

  it.effect("refuses a malformed setting, naming the key", () =>
    Effect.gen(function*() {
      const { probes } = yield* recording()
      const result = yield* Effect.result(choose(probes, { PLANCKCLAW_V8_EARLY_TIER_UP: "sooner" }))
      expect(Result.isFailure(result)).toBe(true)
      if (Result.isFailure(result)) {
        expect(String(result.failure)).toContain("PLANCKCLAW_V8_EARLY_TIER_UP")
        expect(String(result.failure)).toContain("expected 1, 0, true or false")
      }
    }))

  it("names flags this Node's V8 accepts", () => {
    for (const flag of [EarlyTierUp.youngFlag, EarlyTierUp.defaultFlag]) {
      const known = spawnSync(process.execPath, [flag, "-e", "0"], { encoding: "utf8" })
      expect([flag, known.status, known.stderr]).toEqual([flag, 0, ""])
    }
    // The check can fail: a misspelt flag is refused the same way.
    const misspelt = spawnSync(process.execPath, ["--invocation-count-for-turbofn=750", "-e", "0"], { encoding: "utf8" })
    expect(misspelt.status).not.toBe(0)
    // Nor does this Node's V8 say anything when the process sets them (v8.setFlagsFromString prints a refusal).
    const set = spawnSync(
      process.execPath,
      ["-e", `for (const flag of ${JSON.stringify([EarlyTierUp.youngFlag, EarlyTierUp.defaultFlag])}) require("node:v8").setFlagsFromString(flag)`],
      { encoding: "utf8" }
    )
    expect([set.status, set.stdout, set.stderr]).toEqual([0, "", ""])
  })
})
