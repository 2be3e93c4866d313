/**
 * HttpLimits: the connection settings' ranges, the cap worked out from the
 * open-file limit less the reserve, and a cap or settings that would leave
 * no reserve refused with what to set.
 */
import * as child from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result, Option } from "effect"
import * as ConfigErrors from "../../../src/config/ConfigErrors.js"
import * as HttpLimits from "../../../src/hosts/serve/HttpLimits.js"

const load = (entries: Record<string, string>) =>
  Effect.result(Effect.provideService(HttpLimits.LimitsConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(entries))), { preserveEmptyStrings: true })))

const resolved = (entries: Record<string, string>, limit: Option.Option<number>) =>
  Effect.map(load(entries), (config) =>
    Result.mapError(Result.flatMap(config, (values) => HttpLimits.resolve(values, limit)), ConfigErrors.describe))

describe("HttpLimits", () => {
  it.effect("each setting has its range, and the defaults", () =>
    Effect.gen(function*() {
      const ranges: ReadonlyArray<readonly [string, string, string]> = [
        ["PLANCKCLAW_MAX_CONNECTIONS", "0", "1000001"],
        ["PLANCKCLAW_HTTP_REQUEST_TIMEOUT", "0.09", "3600.01"],
        ["PLANCKCLAW_HTTP_IDLE_TIMEOUT", "0.05", "3601"],
        ["PLANCKCLAW_STOP_GRACE", "-1", "3600.5"]
      ]
      for (const [key, ...refused] of ranges) {
        for (const value of [...refused, "1e3", "lots"]) {
          const result = yield* resolved({ [key]: value }, Option.none())
          expect(Result.isFailure(result) ? result.failure : "accepted", `${key}=${value}`).toContain(`${key}: expected`)
        }
      }
      expect(yield* resolved({}, Option.none())).toEqual(Result.succeed({
        maxConnections: 1024,
        requestSeconds: 30,
        idleSeconds: 5,
        stopGraceSeconds: 30
      }))
      expect(yield* resolved({ PLANCKCLAW_STOP_GRACE: "0", PLANCKCLAW_HTTP_IDLE_TIMEOUT: "0.1", PLANCKCLAW_MAX_CONNECTIONS: "1000000" }, Option.none()))
        .toEqual(Result.succeed({ maxConnections: 1_000_000, requestSeconds: 30, idleSeconds: 0.1, stopGraceSeconds: 0 }))
    }))

  it.effect("the cap by default is the open-file limit less the reserve, at most 1024; a set one must leave the reserve", () =>
    Effect.gen(function*() {
      const cap = (entries: Record<string, string>, limit: number) =>
        Effect.map(resolved(entries, Option.some(limit)), Result.map((limits) => limits.maxConnections))
      // 80 + 4 × 128 + 4 × 16 = 656 by default.
      expect(HttpLimits.reserveFor({ agentsHoldingFiles: 128, maxConcurrentTurns: 16 })).toBe(656)
      expect(yield* cap({}, 1_048_576)).toEqual(Result.succeed(1024))
      expect(yield* cap({}, 1024)).toEqual(Result.succeed(368))
      expect(yield* cap({}, 657)).toEqual(Result.succeed(1))
      expect(yield* cap({ PLANCKCLAW_AGENTS_HOLDING_FILES: "0", PLANCKCLAW_MAX_CONCURRENT_TURNS: "1" }, 1024)).toEqual(Result.succeed(1024 - 84))
      expect(yield* cap({ PLANCKCLAW_MAX_CONNECTIONS: "368" }, 1024)).toEqual(Result.succeed(368))
      const over = yield* cap({ PLANCKCLAW_MAX_CONNECTIONS: "369" }, 1024)
      expect(Result.isFailure(over) ? over.failure : "").toMatch(
        /^configuration error: PLANCKCLAW_MAX_CONNECTIONS: 369 connections would eat into .*; set at most 368, or raise ulimit -n$/
      )
      const none = yield* cap({}, 656)
      expect(Result.isFailure(none) ? none.failure : "").toContain(
        "serve would have no descriptors left for connections: the open-file limit (ulimit -n) is 656 and 656 descriptors are kept in reserve"
      )
    }))

  it.effect("reads this process's open-file limit as a shell started from it reports it", () =>
    Effect.gen(function*() {
      const reported = child.execFileSync("/bin/sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim()
      expect(yield* HttpLimits.openFileLimit).toEqual(reported === "unlimited" ? Option.none() : Option.some(Number(reported)))
    }))
})
