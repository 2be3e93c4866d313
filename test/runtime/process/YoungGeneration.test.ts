/**
 * The young generation's cap: nothing set until a collection leaves it at
 * the cap, then growth stopped, allowed again once V8 has shrunk it below
 * the cap, and stopped again at the cap, the observer gone with the
 * serving; left alone when the setting or node's own options say so. And on
 * this Node's real V8: the flag, set while running, keeps a process that
 * allocates hard at the cap, where without it V8 grows further (Node 24),
 * and V8's own factor set back lets it grow again.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { ConfigProvider, Deferred, Effect, Fiber, Result } from "effect"
import { TestClock } from "effect/testing"
import * as YoungGeneration from "../../../src/runtime/process/YoungGeneration.js"

const fromMap = (entries: Record<string, string>) => ConfigProvider.fromEnvRecord(entries, { preserveEmptyStrings: true })

/** Probes whose collections and young-generation size the test drives. */
const recording = (nodeOptions: ReadonlyArray<string> = [], v8Major = 13) => {
  const flags: Array<string> = []
  const state = { size: 1024 * 1024, listeners: new Set<() => void>() }
  const probes: YoungGeneration.Probes = {
    setFlags: (set) => Effect.sync(() => void flags.push(set)),
    youngBytes: () => state.size,
    afterEachCollection: (listener) => {
      state.listeners.add(listener)
      return () => void state.listeners.delete(listener)
    },
    nodeOptions,
    v8Major
  }
  const collect = (size: number) => {
    state.size = size
    for (const listener of [...state.listeners]) listener()
  }
  return { flags, state, probes, collect }
}

const choose = (probes: YoungGeneration.Probes, settings: Record<string, string> = {}) =>
  Effect.provideService(YoungGeneration.readChoice(probes), ConfigProvider.ConfigProvider, fromMap(settings))

describe("YoungGeneration", () => {
  it.effect("stops the growth at the cap, lets it grow again once V8 has shrunk it, and stops listening with the serving", () =>
    Effect.gen(function*() {
      const { collect, flags, probes, state } = recording()
      const during = yield* choose(probes)
      const stop = yield* Deferred.make<void>()
      const serving = yield* Effect.forkChild(during(Deferred.await(stop)))
      yield* TestClock.adjust(0)
      expect(state.listeners.size).toBe(1)
      collect(YoungGeneration.capBytes / 2)
      yield* TestClock.adjust(0)
      expect(flags).toEqual([])
      collect(YoungGeneration.capBytes)
      yield* TestClock.adjust(0)
      expect(flags).toEqual([YoungGeneration.noGrowthFlag])
      collect(2 * YoungGeneration.capBytes)
      yield* TestClock.adjust(0)
      expect(flags).toEqual([YoungGeneration.noGrowthFlag])
      // A quiet process: V8's memory reducer shrank it to its smallest.
      collect(YoungGeneration.capBytes / 16)
      yield* TestClock.adjust(0)
      expect(flags).toEqual([YoungGeneration.noGrowthFlag, YoungGeneration.growthFlag])
      collect(YoungGeneration.capBytes / 8)
      yield* TestClock.adjust(0)
      expect(flags).toEqual([YoungGeneration.noGrowthFlag, YoungGeneration.growthFlag])
      collect(YoungGeneration.capBytes)
      yield* TestClock.adjust(0)
      expect(flags).toEqual([YoungGeneration.noGrowthFlag, YoungGeneration.growthFlag, YoungGeneration.noGrowthFlag])
      expect(state.listeners.size).toBe(1)
      yield* Deferred.succeed(stop, undefined)
      yield* Fiber.join(serving)
      expect(state.listeners.size).toBe(0)
    }))

  it.effect("stops listening when the serving ends before the cap", () =>
    Effect.gen(function*() {
      const { flags, probes, state } = recording()
      expect(yield* (yield* choose(probes))(Effect.succeed(42))).toBe(42)
      expect(state.listeners.size).toBe(0)
      expect(flags).toEqual([])
    }))

  it.effect("leaves V8 alone with PLANCKCLAW_V8_YOUNG_GENERATION_CAP=0, node's own young-generation options, or Node 22's V8", () =>
    Effect.gen(function*() {
      for (
        const [settings, options, v8Major] of [
          [{ PLANCKCLAW_V8_YOUNG_GENERATION_CAP: "0" }, [], 13],
          [{}, ["--max-semi-space-size=64"], 13],
          [{}, ["--semi-space-growth-factor=4"], 13],
          // Node 22's V8 stops at 32 MiB itself.
          [{}, [], 12]
        ] as const
      ) {
        const { collect, flags, probes, state } = recording(options, v8Major)
        const during = yield* choose(probes, settings)
        const serving = yield* Effect.forkChild(during(Effect.never))
        yield* TestClock.adjust(0)
        collect(4 * YoungGeneration.capBytes)
        yield* TestClock.adjust(0)
        expect([options, state.listeners.size, flags]).toEqual([options, 0, []])
        yield* Fiber.interrupt(serving)
      }
    }))

  it.effect("refuses a malformed setting, naming the key", () =>
    Effect.gen(function*() {
      const { probes } = recording()
      const result = yield* Effect.result(choose(probes, { PLANCKCLAW_V8_YOUNG_GENERATION_CAP: "small" }))
      expect(Result.isFailure(result) && String(result.failure)).toContain("PLANCKCLAW_V8_YOUNG_GENERATION_CAP")
    }))

  it("on this Node's V8, the flag set while running keeps the young generation at the size it has", () => {
    // Short-lived objects with a working set large enough that V8 grows its young generation as far as it may.
    const program = (setFirst: boolean) => `
      const v8 = require("node:v8")
      const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size
      let grown = 0
      const churn = (rounds) => { let keep = []; for (let i = 0; i < rounds; i++) { keep.push({ i, a: [i] }); if (keep.length > 40000) keep = [] } }
      if (${setFirst}) { while (young() < ${YoungGeneration.capBytes / 2}) churn(10000); grown = young(); v8.setFlagsFromString(${JSON.stringify(YoungGeneration.noGrowthFlag)}) }
      churn(4e6)
      console.log(JSON.stringify({ grown, end: young() }))`
    const run = (setFirst: boolean) => {
      const child = spawnSync(process.execPath, ["-e", program(setFirst)], { encoding: "utf8" })
      expect([child.status, child.stderr]).toEqual([0, ""])
      return JSON.parse(child.stdout) as { grown: number; end: number }
    }
    const free = run(false)
    const capped = run(true)
    // Without the flag V8 grows past where the flag was set (to 32-128 MiB from 8 here, doubling each time);
    // with it, the young generation does not double again. Not exactly where it was: under load (a clean-clone
    // CI run) V8 moved it from 8 to 10.25 MiB with the factor at 1.
    expect(free.end).toBeGreaterThan(capped.grown)
    expect(capped.end).toBeLessThan(2 * capped.grown)
  })

  it("on this Node's V8, V8's own growth factor set back while running lets the young generation grow again", () => {
    const program = `
      const v8 = require("node:v8")
      const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size
      const churn = (rounds) => { let keep = []; for (let i = 0; i < rounds; i++) { keep.push({ i, a: [i] }); if (keep.length > 40000) keep = [] } }
      while (young() < ${YoungGeneration.capBytes / 4}) churn(10000)
      v8.setFlagsFromString(${JSON.stringify(YoungGeneration.noGrowthFlag)})
      const held = young()
      churn(4e6)
      const stillHeld = young()
      v8.setFlagsFromString(${JSON.stringify(YoungGeneration.growthFlag)})
      churn(4e6)
      console.log(JSON.stringify({ held, stillHeld, end: young() }))`
    const child = spawnSync(process.execPath, ["-e", program], { encoding: "utf8" })
    expect([child.status, child.stderr]).toEqual([0, ""])
    const { end, held, stillHeld } = JSON.parse(child.stdout) as { held: number; stillHeld: number; end: number }
    // Held: not doubled (V8 may still move its size by a page or so, as it did once under load: 4 to 4.75 MiB).
    expect(stillHeld).toBeLessThan(2 * held)
    // Let go: grown by V8's own factor, at least once (32 to 128 MiB here, from 4).
    expect(end).toBeGreaterThanOrEqual(2 * held)
  })
})
