/**
 * Every numeric setting has a range, enforced where the key is declared:
 * values outside it (and numbers written any other way than plain decimal,
 * such as 1e20 or 99999999999999999999) are refused with an error naming
 * the key and the range. The built command turns that into exit 2 and one
 * line; a fractional brain timeout is accepted everywhere it is read.
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Duration, Effect, Result } from "effect"
import { AgentConfig } from "../../src/config/AgentConfig.js"
import { AnthropicConfig } from "../../src/brain/AnthropicBrain.js"
import { BrainRetriesConfig, BrainTimeoutConfig } from "../../src/brain/BrainRetry.js"
import { ClawTimeoutConfig, ScriptsConfig } from "../../src/claws/ScriptClaws.js"
import * as ConfigErrors from "../../src/config/ConfigErrors.js"
import { DebugConfig } from "../../src/runtime/Logging.js"
import { AgentPerConfig } from "../../src/hosts/serve/DiscordRoutes.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { tempDir } from "../support/Sandbox.js"

const load = <A>(config: Config.Config<A>, entries: Record<string, string>) =>
  Effect.result(Effect.provideService(config, ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(entries))), { preserveEmptyStrings: true })))

/** The error line a user would see, or the value. */
const attempt = <A>(config: Config.Config<A>, entries: Record<string, string>) =>
  Effect.map(load(config, entries), Result.mapError(ConfigErrors.describe))

interface Case {
  readonly key: string
  readonly read: (entries: Record<string, string>) => Effect.Effect<Result.Result<number, string>>
  readonly min: number
  readonly max: number
  /** Seconds may have a fraction; the others are whole numbers. */
  readonly seconds?: boolean
}

const agentKey = (pick: (config: AgentConfig) => number): Case["read"] => (entries) =>
  Effect.map(attempt(AgentConfig, { HISTORY_MAX: "1000000000", ...entries }), Result.map(pick))

const cases: ReadonlyArray<Case> = [
  { key: "PLANCKCLAW_MAX_TOKENS", read: agentKey((c) => c.maxTokens), min: 1, max: 1_000_000 },
  {
    key: "HISTORY_MAX",
    read: (entries) => Effect.map(attempt(AgentConfig, { HISTORY_KEEP: "0", ...entries }), Result.map((c) => c.historyMax)),
    min: 1,
    max: 1_000_000_000
  },
  { key: "HISTORY_KEEP", read: agentKey((c) => c.historyKeep), min: 0, max: 100_000 },
  { key: "PLANCKCLAW_MAX_TOOL_ROUNDS", read: agentKey((c) => c.maxToolRounds), min: 1, max: 100 },
  {
    key: "PLANCKCLAW_MAX_MESSAGE_BYTES",
    read: agentKey((c) => c.maxMessageBytes),
    min: 1,
    max: 1_048_576
  },
  {
    key: "PLANCKCLAW_COMPACTION_CHUNK",
    read: agentKey((c) => c.compactionChunkChars),
    min: 1,
    max: 10_000_000
  },
  {
    key: "PLANCKCLAW_CLAW_OUTPUT_MAX",
    read: (entries) => Effect.map(attempt(ScriptsConfig, entries), Result.map((c) => c.outputMax)),
    min: 1,
    max: 1_048_576
  },
  {
    key: "PLANCKCLAW_CLAW_TIMEOUT",
    read: (entries) => Effect.map(attempt(ScriptsConfig, entries), Result.map((c) => Duration.toSeconds(c.timeout))),
    min: 0.1,
    max: 86_400,
    seconds: true
  },
  {
    key: "PLANCKCLAW_BRAIN_TIMEOUT",
    read: (entries) =>
      Effect.map(attempt(AnthropicConfig, { ANTHROPIC_API_KEY: "k", ...entries }), Result.map((c) => Duration.toSeconds(c.timeout))),
    min: 0.1,
    max: 3_600,
    seconds: true
  },
  {
    key: "PLANCKCLAW_BRAIN_RETRIES",
    read: (entries) => Effect.map(attempt(AnthropicConfig, { ANTHROPIC_API_KEY: "k", ...entries }), Result.map((c) => c.retries)),
    min: 0,
    max: 100
  }
]

describe("numeric settings have ranges", () => {
  for (const { key, max, min, read, seconds } of cases) {
    it.effect(`${key}: ${min} to ${max}`, () =>
      Effect.gen(function*() {
        expect(yield* read({ [key]: String(min) })).toEqual(Result.succeed(min))
        expect(yield* read({ [key]: String(max) })).toEqual(Result.succeed(max))
        expect(yield* read({ [key]: ` ${max} ` })).toEqual(Result.succeed(max))
        const step = seconds === true ? 0.01 : 1
        const refused = [
          String(min - step),
          String(max + step),
          "99999999999999999999",
          "1e20",
          "1e3",
          "0x10",
          "Infinity",
          "NaN",
          "lots",
          ...(seconds === true ? ["-1", "1.2.3", ".5s"] : ["1.5", "-1"])
        ]
        for (const value of refused) {
          const result = yield* read({ [key]: value })
          expect([value, Result.isFailure(result)]).toEqual([value, true])
          const message = Result.isFailure(result) ? result.failure : ""
          expect(message).toContain(`${key}: expected`)
          expect(message).toContain(`from ${min} to ${max}`)
        }
        expect(yield* read({ [key]: "99999999999999999999" })).toEqual(
          Result.fail(
            `configuration error: ${key}: expected ${seconds === true ? "a number of seconds" : "an integer"} ` +
              `from ${min} to ${max}, got "99999999999999999999"`
          )
        )
      }))
  }

  it.effect("the brain's timeout and retries are declared once and shared: a fractional timeout reads as such", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flatMap(load(BrainTimeoutConfig, { PLANCKCLAW_BRAIN_TIMEOUT: "2.5" }), Effect.fromResult)).toBe(2.5)
      expect(yield* Effect.flatMap(load(BrainRetriesConfig, {}), Effect.fromResult)).toBe(4)
      expect(yield* Effect.flatMap(load(ClawTimeoutConfig, { PLANCKCLAW_CLAW_TIMEOUT: "1.5" }), Effect.fromResult)).toBe(1.5)
    }))

  it.effect("HISTORY_KEEP must stay below HISTORY_MAX", () =>
    Effect.gen(function*() {
      const result = yield* attempt(AgentConfig, { HISTORY_MAX: "10", HISTORY_KEEP: "10" })
      expect(result).toEqual(Result.fail("configuration error: HISTORY_KEEP must be smaller than HISTORY_MAX"))
    }))

  it.effect("PLANCKCLAW_DEBUG is 1, 0, true or false (any case), nothing else", () =>
    Effect.gen(function*() {
      for (const [value, on] of [["1", true], ["true", true], ["TRUE", true], [" True ", true], ["0", false], ["false", false]] as const) {
        expect(yield* attempt(DebugConfig, { PLANCKCLAW_DEBUG: value })).toEqual(Result.succeed(on))
      }
      expect(yield* attempt(DebugConfig, {})).toEqual(Result.succeed(false))
      for (const value of ["abc", "2", "yes", "on", "1.0"]) {
        expect(yield* attempt(DebugConfig, { PLANCKCLAW_DEBUG: value })).toEqual(
          Result.fail(`configuration error: PLANCKCLAW_DEBUG: expected 1, 0, true or false, got "${value}"`)
        )
      }
    }))
})

describe("settings of a few words", () => {
  it.effect("DISCORD_AGENT_PER names the key, the words it takes and what it got", () =>
    Effect.gen(function*() {
      expect(yield* attempt(AgentPerConfig, {})).toEqual(Result.succeed("channel"))
      expect(yield* attempt(AgentPerConfig, { DISCORD_AGENT_PER: "user" })).toEqual(Result.succeed("user"))
      expect(yield* attempt(AgentPerConfig, { DISCORD_AGENT_PER: " server " })).toEqual(Result.succeed("server"))
      for (const value of ["guild", "Channel", "1"]) {
        expect(yield* attempt(AgentPerConfig, { DISCORD_AGENT_PER: value })).toEqual(
          Result.fail(`configuration error: DISCORD_AGENT_PER: expected channel, user, server or one, got "${value}"`)
        )
      }
    }))
})

describe("numeric settings out of range (built command)", () => {
  const env = (cwd: string, extra: Record<string, string>) =>
    Cli.baseEnv({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      PLANCKCLAW_DIR: path.join(cwd, "memory"),
      PLANCKCLAW_RUN_DIR: path.join(cwd, "run"),
      CLAWS_DIR: path.join(Cli.REPO, "claws"),
      ...extra
    })

  it.live("exit 2 with one line naming the key and its range", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir("planckclaw-ranges-")
      const expectations = [
        [["run"], { PLANCKCLAW_MAX_TOKENS: "99999999999999999999" }, "PLANCKCLAW_MAX_TOKENS: expected an integer from 1 to 1000000"],
        [["tools"], { PLANCKCLAW_CLAW_OUTPUT_MAX: "1e20" }, "PLANCKCLAW_CLAW_OUTPUT_MAX: expected an integer from 1 to 1048576"],
        [["tools"], { PLANCKCLAW_DEBUG: "abc" }, "PLANCKCLAW_DEBUG: expected 1, 0, true or false"],
        [["run"], { PLANCKCLAW_BRAIN_TIMEOUT: "1e9" }, "PLANCKCLAW_BRAIN_TIMEOUT: expected a number of seconds from 0.1 to 3600"]
      ] as const
      for (const [args, extra, expected] of expectations) {
        const result = yield* Cli.run(args, { cwd, env: env(cwd, extra), input: "hi\n" })
        expect(result.code, result.stderr).toBe(2)
        expect(result.stderr.trimEnd().split("\n"), result.stderr).toHaveLength(1)
        expect(result.stderr).toContain(`planckclaw: configuration error: ${expected}, got "`)
      }
    }), 120_000)

  it.live("PLANCKCLAW_BRAIN_TIMEOUT=2.5 planckclaw run answers", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir("planckclaw-ranges-")
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Fine.")))
      const result = yield* Cli.run(["run"], {
        cwd,
        env: env(cwd, { ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_BRAIN_TIMEOUT: "2.5" }),
        input: "hi\n"
      })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("Fine.\n")
    }), 60_000)
})
