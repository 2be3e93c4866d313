import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigError, Effect, Either } from "effect"
import { AgentConfig } from "../../src/AgentConfig.js"
import * as ConfigErrors from "../../src/config/ConfigErrors.js"
import * as ConfigFile from "../../src/config/ConfigFile.js"

describe("config.env", () => {
  it("reads export lines, quotes, comments and blank lines", () => {
    const parsed = ConfigFile.parse([
      "# a comment",
      "",
      "export ANTHROPIC_API_KEY=\"abc \\\"def\\\"\"",
      "HISTORY_MAX=300 # trailing comment",
      "export PLANCKCLAW_MODEL='claude-x'",
      "  export EMPTY=\"\""
    ].join("\n"))
    expect(Either.getOrThrow(parsed)).toEqual(
      new Map([
        ["ANTHROPIC_API_KEY", "abc \"def\""],
        ["HISTORY_MAX", "300"],
        ["PLANCKCLAW_MODEL", "claude-x"],
        ["EMPTY", ""]
      ])
    )
  })

  it("names the line that is not KEY=value, without repeating it (it may be a pasted secret)", () => {
    expect(ConfigFile.parse("A=1\nsk-ant-pasted-on-its-own\n")).toEqual(
      Either.left("config.env:2: expected KEY=\"value\" (optionally after export); the line is not shown, as it may hold a secret")
    )
    expect(ConfigFile.parse("A=\"open")).toEqual(Either.left("config.env:1: unterminated double quote"))
  })

  it.effect("lets flags override the environment, and the environment override the file", () =>
    Effect.gen(function*() {
      const provider = ConfigFile.provider({
        file: new Map([["A", "file"], ["B", "file"], ["C", "file"]]),
        environment: { B: "env", C: "env", D: "" },
        flags: new Map([["C", "flag"]])
      })
      const values = yield* Config.all([
        Config.string("A"),
        Config.string("B"),
        Config.string("C"),
        Config.string("D").pipe(Config.withDefault("unset"))
      ]).pipe(Effect.withConfigProvider(provider))
      expect(values).toEqual(["file", "env", "flag", "unset"])
    }))

  it.effect("rejects bad agent settings naming the key and what was expected", () =>
    Effect.gen(function*() {
      const attempt = (settings: Record<string, string>) =>
        Effect.flip(AgentConfig).pipe(
          Effect.withConfigProvider(
            ConfigFile.provider({ file: new Map(), environment: {}, flags: new Map(Object.entries(settings)) })
          ),
          Effect.map((error) => ConfigErrors.describe(error as ConfigError.ConfigError))
        )
      expect(yield* attempt({ HISTORY_MAX: "lots" })).toContain(
        "configuration error: HISTORY_MAX: expected an integer from 1 to 1000000000, got \"lots\""
      )
      expect(yield* attempt({ HISTORY_MAX: "0" })).toContain("HISTORY_MAX: expected an integer from 1 to 1000000000, got \"0\"")
      expect(yield* attempt({ HISTORY_MAX: "10", HISTORY_KEEP: "10" })).toContain(
        "HISTORY_KEEP must be smaller than HISTORY_MAX"
      )
    }))
})
