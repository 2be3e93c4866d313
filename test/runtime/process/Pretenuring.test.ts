/**
 * The run's choice about V8's allocation-site pretenuring: off unless the
 * setting keeps it, a malformed setting refused naming the key, the flag
 * one that this Node's V8 knows (node refuses an unknown one on its command
 * line, where `v8.setFlagsFromString` would ignore it without a word). The
 * built run applying it: V8Flags.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { ConfigProvider, Effect, Result } from "effect"
import { noPretenuringFlag, readChoice } from "../../../src/runtime/process/Pretenuring.js"

const fromMap = (entries: Record<string, string>) => ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(entries))), { preserveEmptyStrings: true })

const flagsSet = (entries: Record<string, string>) =>
  Effect.gen(function*() {
    const set: Array<string> = []
    const apply = yield* Effect.provideService(readChoice((flags) => Effect.sync(() => void set.push(flags))), ConfigProvider.ConfigProvider, fromMap(entries))
    // Reading the setting changes nothing: only the effect it gives does.
    expect(set).toEqual([])
    yield* apply
    return set
  })

describe("Pretenuring", () => {
  it.effect("turns V8's pretenuring off by default, and keeps it when PLANCKCLAW_V8_PRETENURING=1", () =>
    Effect.gen(function*() {
      expect(yield* flagsSet({})).toEqual(["--no-allocation-site-pretenuring"])
      expect(yield* flagsSet({ PLANCKCLAW_V8_PRETENURING: "0" })).toEqual(["--no-allocation-site-pretenuring"])
      expect(yield* flagsSet({ PLANCKCLAW_V8_PRETENURING: "1" })).toEqual([])
      expect(yield* flagsSet({ PLANCKCLAW_V8_PRETENURING: "true" })).toEqual([])
    }))

  it.effect("refuses a malformed setting, naming the key", () =>
    Effect.gen(function*() {
      const result = yield* Effect.result(Effect.provideService(readChoice(() => Effect.void), ConfigProvider.ConfigProvider, fromMap({ PLANCKCLAW_V8_PRETENURING: "maybe" })))
      expect(Result.isFailure(result)).toBe(true)
      if (Result.isFailure(result)) {
        expect(String(result.failure)).toContain("PLANCKCLAW_V8_PRETENURING")
        expect(String(result.failure)).toContain("expected 1, 0, true or false")
      }
    }))

  it("names a flag this Node's V8 accepts", () => {
    const known = spawnSync(process.execPath, [noPretenuringFlag, "-e", "0"], { encoding: "utf8" })
    expect([known.status, known.stderr]).toEqual([0, ""])
    // The check can fail: a misspelt flag is refused the same way.
    const misspelt = spawnSync(process.execPath, ["--no-allocation-site-pretenurin", "-e", "0"], { encoding: "utf8" })
    expect(misspelt.status).not.toBe(0)
  })
})
