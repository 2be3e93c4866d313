/**
 * Secrets' characters are checked where a bridge declares the secret, with
 * messages that name the key and never the value; the environment's
 * secrets, withdrawn from process.env at start-up, still rank as the
 * environment in the settings.
 */
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Result, Option, Redacted } from "effect"
import { optionWhenUnset } from "../../src/config/UnsetSetting.js"
import * as ConfigErrors from "../../src/config/ConfigErrors.js"
import * as ConfigFile from "../../src/config/ConfigFile.js"
import { DiscordConfig } from "../../src/interact/discord/Settings.js"
import { childEnvironment, headerSecret, problemWith, scrub } from "../../src/config/Secrets.js"

const fromMap = (entries: Record<string, string>) => ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(entries))), { preserveEmptyStrings: true })

describe("secret values", () => {
  it("refuses what an HTTP header cannot carry, saying where, never what", () => {
    expect(problemWith("sk-ant-api03-AbC_123")).toBeUndefined()
    expect(problemWith("  sk-ant  ")).toBeUndefined()
    expect(problemWith("caf\u00e9")).toBeUndefined()
    const cases = [
      ["ab\ncd", "holds a line break (CR or LF) at character 3"],
      ["ab\rcd", "holds a line break (CR or LF) at character 3"],
      ["ab\tcd", "holds a control character at character 3"],
      ["ab\u0000cd", "holds a control character at character 3"],
      ["ab\u007fcd", "holds a control character at character 3"],
      ["ab\u0085cd", "holds a control character at character 3"],
      ["ab cd", "holds a space at character 3"],
      ["ab\u00a0cd", "holds a space at character 3"],
      ["ab\u20accd", "holds a character outside Latin-1 at character 3, which an HTTP header cannot carry"],
      ["ab\u{1f511}cd", "holds a character outside Latin-1 at character 3, which an HTTP header cannot carry"]
    ] as const
    for (const [value, problem] of cases) expect([value, problemWith(value)]).toEqual([value, problem])
  })

  it.effect("a declared secret: empty counts as unset, a bad one is refused naming the key only", () =>
    Effect.gen(function*() {
      const key = headerSecret("ANTHROPIC_API_KEY")
      const ok = yield* Effect.provideService(key, ConfigProvider.ConfigProvider, fromMap({ ANTHROPIC_API_KEY: "sk-good" }))
      expect(Redacted.value(ok)).toBe("sk-good")
      // Unset as an optional secret is read (Effect 4's Config.option recovers only a key no source has).
      const unset = yield* Effect.provideService(
        optionWhenUnset(key, "ANTHROPIC_API_KEY"),
        ConfigProvider.ConfigProvider,
        fromMap({ ANTHROPIC_API_KEY: "   " })
      )
      expect(unset).toEqual(Option.none())
      const bad = yield* Effect.flip(Effect.provideService(key, ConfigProvider.ConfigProvider, fromMap({ ANTHROPIC_API_KEY: "sk-secret\nX: y" })))
      const line = ConfigErrors.describe(bad)
      expect(line).toBe(
        "configuration error: ANTHROPIC_API_KEY: holds a line break (CR or LF) at character 10; the value is not shown"
      )
    }))

  it.effect("a declared secret is kept without the spaces around it: what fetch sends, a server echoes and scrub looks for", () =>
    Effect.gen(function*() {
      const key = headerSecret("ANTHROPIC_API_KEY")
      for (const padded of [" sk-padded-0123456789", "sk-padded-0123456789  ", "  sk-padded-0123456789 "]) {
        const read = yield* Effect.provideService(key, ConfigProvider.ConfigProvider, fromMap({ ANTHROPIC_API_KEY: padded }))
        expect(Redacted.value(read)).toBe("sk-padded-0123456789")
      }
    }))

  it.effect("a child is not given a variable holding a secret that was set with spaces around it", () =>
    Effect.gen(function*() {
      const names = ["PLANCKCLAW_TEST_PADDED_BEARER", "PLANCKCLAW_TEST_PADDED_COPY", "PLANCKCLAW_TEST_PADDED_PLAIN"]
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.env[names[0]!] = "Bearer sk-padded-0123456789"
          process.env[names[1]!] = "sk-padded-0123456789"
          process.env[names[2]!] = "nothing secret"
        }),
        () => Effect.sync(() => names.forEach((name) => delete process.env[name]))
      )
      const env = childEnvironment([Redacted.make("sk-padded-0123456789 ")])
      expect(names.filter((name) => name in env)).toEqual(["PLANCKCLAW_TEST_PADDED_PLAIN"])
    }))

  it.effect("the Discord token may carry a \"Bot \" prefix, but no space inside the token", () =>
    Effect.gen(function*() {
      const read = (token: string) =>
        Effect.result(
          Effect.provideService(DiscordConfig, ConfigProvider.ConfigProvider, fromMap({ DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: "1" }))
        )
      expect(Result.isSuccess(yield* read("Bot MTIz.abc.def"))).toBe(true)
      expect(Result.isSuccess(yield* read("MTIz.abc.def"))).toBe(true)
      const bad = yield* read("Bot MTIz abc")
      expect(Result.isFailure(bad) ? ConfigErrors.describe(bad.failure) : "").toBe(
        "configuration error: DISCORD_BOT_TOKEN: holds a space at character 5; the value is not shown"
      )
    }))

  it.effect("withdrawn secrets rank as the environment: over config.env, under flags", () =>
    Effect.gen(function*() {
      const provider = (flags: Record<string, string>) =>
        ConfigFile.provider({
          file: new Map([["ANTHROPIC_API_KEY", "from-file"], ["DISCORD_BOT_TOKEN", "token-from-file"]]),
          environment: {},
          withdrawnSecrets: new Map([["ANTHROPIC_API_KEY", "from-env"]]),
          flags: new Map(Object.entries(flags))
        })
      const both = Config.all([Config.String("ANTHROPIC_API_KEY"), Config.String("DISCORD_BOT_TOKEN")])
      expect(yield* Effect.provideService(both, ConfigProvider.ConfigProvider, provider({}))).toEqual(["from-env", "token-from-file"])
      expect(yield* Effect.provideService(both, ConfigProvider.ConfigProvider, provider({ ANTHROPIC_API_KEY: "from-flag" }))).toEqual([
        "from-flag",
        "token-from-file"
      ])
    }))
})

describe("scrub", () => {
  it("replaces a key wherever it shows, a short placeholder key only where it stands alone", () => {
    const key = "sk-test-0123456789abcdef"
    expect(scrub(`bad key ${key}; url https://h/?k=${key}x`, key)).toBe("bad key <redacted>; url https://h/?k=<redacted>x")
    // A local server's placeholder key: host names, addresses and words keep their letters.
    expect(scrub("POST http://127.0.0.1:8080/v1 (model x-large) said: invalid key 1", "1")).toBe(
      "POST http://127.0.0.1:8080/v1 (model x-large) said: invalid key <redacted>"
    )
    expect(scrub(`{"error":"key \"x\" unknown","hint":"x"} Bearer x`, "x")).toBe(
      `{"error":"key \"<redacted>\" unknown","hint":"<redacted>"} Bearer <redacted>`
    )
    expect(scrub("api.example.com: box", "x")).toBe("api.example.com: box")
    expect(scrub("key=abc", "abc")).toBe("key=<redacted>")
    expect(scrub("anything", undefined)).toBe("anything")
    expect(scrub("anything", "")).toBe("anything")
  })
})
