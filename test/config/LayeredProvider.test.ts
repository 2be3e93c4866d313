import { describe, expect, it } from "@effect/vitest"
import { Cause, Config, ConfigProvider, Effect, Exit, Option, Schema } from "effect"
import { AgentConfig } from "../../src/config/AgentConfig.js"
import { StartupConfig } from "../../src/cli/CliSettings.js"
import * as ConfigErrors from "../../src/config/ConfigErrors.js"
import * as ConfigFile from "../../src/config/ConfigFile.js"
import * as LayeredProvider from "../../src/config/LayeredProvider.js"

/** What settings were read through before: a provider per map, chained with orElse, flags first. */
const chained = (maps: ReadonlyArray<Map<string, string>>) =>
  maps.map((map) => ConfigProvider.fromEnvRecord(Object.fromEntries(map), { preserveEmptyStrings: true }))
    .reduce((first, next) => ConfigProvider.orElse(first, next))

const settings = (layers: {
  readonly flags?: Record<string, string>
  readonly environment?: Record<string, string>
  readonly file?: Record<string, string>
  readonly defaults?: Record<string, string>
}) =>
  ConfigFile.provider({
    flags: new Map(Object.entries(layers.flags ?? {})),
    environment: layers.environment ?? {},
    file: new Map(Object.entries(layers.file ?? {})),
    defaults: new Map(Object.entries(layers.defaults ?? {}))
  })

const read = <A>(config: Config.Config<A>, provider: ConfigProvider.ConfigProvider) =>
  Effect.exit(Effect.provideService(config, ConfigProvider.ConfigProvider, provider))

const message = <A>(exit: Exit.Exit<A, Config.ConfigError>): string =>
  Exit.match(exit, {
    onFailure: (cause) => Option.match(Cause.findErrorOption(cause), { onNone: () => "defect", onSome: ConfigErrors.describe }),
    onSuccess: (value) => `value ${JSON.stringify(value)}`
  })

describe("settings precedence (flags, environment, config.env, home defaults)", () => {
  it.effect("the environment wins over config.env, config.env over the home defaults", () =>
    Effect.gen(function*() {
      const provider = settings({
        environment: { PLANCKCLAW_DIR: "/env/memory" },
        file: { PLANCKCLAW_DIR: "/file/memory", CLAWS_DIR: "/file/claws" },
        defaults: { PLANCKCLAW_DIR: "/home/memory", CLAWS_DIR: "/home/claws", PLANCKCLAW_AGENTS_DIR: "/home/agents" }
      })
      const values = yield* Config.all([
        Config.String("PLANCKCLAW_DIR"),
        Config.String("CLAWS_DIR"),
        Config.String("PLANCKCLAW_AGENTS_DIR")
      ]).pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider))
      expect(values).toEqual(["/env/memory", "/file/claws", "/home/agents"])
    }))

  it.effect("a bad environment value is refused, naming it, even when config.env has a good one", () =>
    Effect.gen(function*() {
      const exit = yield* read(AgentConfig, settings({ environment: { HISTORY_MAX: "lots" }, file: { HISTORY_MAX: "300" } }))
      expect(message(exit)).toBe(
        "configuration error: HISTORY_MAX: expected an integer from 1 to 1000000000, got \"lots\""
      )
    }))

  it.effect("answers and fails exactly as the orElse chain did, key by key", () =>
    Effect.gen(function*() {
      const flags = new Map([["C", "flag"], ["N", "x"]])
      const environment = new Map([["B", "env"], ["C", "env"], ["N", "7"], ["M", "nope"], ["L[0]", "a"], ["L[1]", "b"]])
      const file = new Map([["A", "file"], ["N", "8"], ["M", "9"], ["HISTORY_MAX", "0"]])
      const defaults = new Map([["A", "default"], ["Z", "default"]])
      const maps = [flags, environment, file, defaults]
      const configs: ReadonlyArray<Config.Config<unknown>> = [
        Config.String("A"),
        Config.String("C"),
        Config.String("Z"),
        Config.String("unset"),
        Config.String("unset").pipe(Config.withDefault("fallback")),
        Config.option(Config.String("unset")),
        Config.Int("N"), // "x" in the flags does not parse: refused, as the chain refuses it (it falls back on a missing key only)
        Config.Int("M"),
        Config.Int("unset"),
        Config.Array(Schema.String, "L"),
        Config.String("L"),
        Config.all([Config.String("A"), Config.Int("M")]),
        AgentConfig,
        StartupConfig
      ]
      for (const config of configs) {
        const before = yield* read(config, chained(maps))
        const now = yield* read(config, LayeredProvider.layered(maps))
        expect(message(now)).toBe(message(before))
        expect(now).toStrictEqual(before)
      }
    }))
})
