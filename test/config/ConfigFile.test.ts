import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Result, Option } from "effect"
import { AgentConfig } from "../../src/config/AgentConfig.js"
import { unknownKeys } from "../../src/cli/CliSettings.js"
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
    expect(Result.getOrThrow(parsed)).toEqual(
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
      Result.fail("config.env:2: expected KEY=\"value\" (optionally after export); the line is not shown, as it may hold a secret")
    )
    expect(ConfigFile.parse("A=\"open")).toEqual(Result.fail(
      "config.env:1: unterminated double quote (values cannot span lines); the line is not shown, as it may hold a secret"
    ))
  })

  it("reads config.env as people write it: comments after values, quotes, optional export, CRLF", () => {
    const parsed = ConfigFile.parse([
      "\uFEFF# written by hand",
      "export ANTHROPIC_API_KEY=\"test-key\"  # the key",
      "HISTORY_MAX=300\t# tabs too",
      "export PLANCKCLAW_MODEL='claude-x' # single quotes",
      "A='# not a comment'",
      "B=\"two # words\"",
      "C=a#b",
      "D= # nothing",
      "E=\"it's\"'\"quoted\"'",
      "  export   F=spaced  ",
      "export G",
      "H=\"a\\\"b\\\\c\\$d\\`e\\nf\""
    ].join("\r\n") + "\r\n")
    expect(Object.fromEntries(Result.getOrThrow(parsed))).toEqual({
      ANTHROPIC_API_KEY: "test-key",
      HISTORY_MAX: "300",
      PLANCKCLAW_MODEL: "claude-x",
      A: "# not a comment",
      B: "two # words",
      C: "a#b",
      D: "",
      E: "it's\"quoted\"",
      F: "spaced",
      H: "a\"b\\c$d`e\\nf"
    })
  })

  it("expands $VAR and ${VAR} from earlier lines first, then the environment; never inside single quotes", () => {
    const parsed = ConfigFile.parse([
      "BASE=$HOME/agent",
      "export PLANCKCLAW_DIR=\"${BASE}/memory\"",
      "KEY=${SECRET_FROM_ENV}",
      "LITERAL='$HOME'",
      "MISSING=\"[$NOPE]\"",
      "FALLBACK=${NOPE:-40}",
      "EMPTY_FALLBACK=${EMPTY:-x}${EMPTY-y}",
      "PRICE=$5",
      "HOME=/elsewhere",
      "AFTER=$HOME"
    ].join("\n"), "config.env", { HOME: "/home/me", SECRET_FROM_ENV: "test-key", EMPTY: "" })
    expect(Object.fromEntries(Result.getOrThrow(parsed))).toMatchObject({
      BASE: "/home/me/agent",
      PLANCKCLAW_DIR: "/home/me/agent/memory",
      KEY: "test-key",
      LITERAL: "$HOME",
      MISSING: "[]",
      FALLBACK: "40",
      EMPTY_FALLBACK: "x",
      PRICE: "$5",
      AFTER: "/elsewhere"
    })
  })

  it("reads ~ as a shell reads it in an assignment: $HOME at the start of the value or after a colon, unquoted", () => {
    const parsed = ConfigFile.parse([
      "CLAWS_DIR=~/claws",
      "ALONE=~",
      "LIST=/a:~/b",
      "FALLBACK=${NOPE:-~/memory}",
      "QUOTED=\"~/x\"",
      "SINGLE='~'",
      "QUOTED_FALLBACK=\"${NOPE:-~/y}\"",
      "INSIDE=a~b",
      "HOME=/elsewhere",
      "AFTER=~/z"
    ].join("\n"), "config.env", { HOME: "/home/me" })
    expect(Object.fromEntries(Result.getOrThrow(parsed))).toMatchObject({
      CLAWS_DIR: "/home/me/claws",
      ALONE: "/home/me",
      LIST: "/a:/home/me/b",
      FALLBACK: "/home/me/memory",
      QUOTED: "~/x",
      SINGLE: "~",
      QUOTED_FALLBACK: "~/y",
      INSIDE: "a~b",
      AFTER: "/elsewhere/z"
    })
    const problem = (text: string, environment: Record<string, string> = { HOME: "/home/me" }) =>
      Result.getFailure(ConfigFile.parse(text, "config.env", environment)).pipe(Option.getOrElse(() => "accepted"))
    expect(problem("A=~bob/notes")).toBe(
      "config.env:1: ~NAME (another user's home) is not expanded here: write the path; the line is not shown, as it may hold a secret"
    )
    expect(problem("A=~/notes", {})).toBe(
      "config.env:1: ~ stands for $HOME, which is not set: write the path; the line is not shown, as it may hold a secret"
    )
  })

  it("refuses a ${NAME:-default} whose default a shell would read otherwise (quotes, backslashes)", () => {
    const problem = (text: string) => Result.getFailure(ConfigFile.parse(text)).pipe(Option.getOrElse(() => "accepted"))
    for (const line of ["A=${NOPE:-\"q\"}", "A=${NOPE:-'q'}", "A=\"${NOPE:-\"q\"}\"", "A=${NOPE:-a\\}b}", "A=${NOPE-$X}"]) {
      expect([line, problem(line)]).toEqual([
        line,
        "config.env:1: the default of ${NAME:-default} must be plain text: no quotes, $, backticks or backslashes; " +
          "the line is not shown, as it may hold a secret"
      ])
    }
  })

  it("refuses command substitution with its line number, and runs nothing", () => {
    const marker = path.join(os.tmpdir(), `planckclaw-substitution-${process.pid}`)
    for (const line of [`X=$(touch ${marker})`, `X="$(touch ${marker})"`, `X=\`touch ${marker}\``, `X="a\`touch ${marker}\`"`, "X=$((1+2))"]) {
      const parsed = ConfigFile.parse(`# first\nA=1\n${line}\n`)
      expect(Result.getFailure(parsed)).toEqual(Option.some(
        "config.env:3: command substitution ($(...) or backticks) is never run: write the value itself; " +
          "the line is not shown, as it may hold a secret"
      ))
    }
    expect(fs.existsSync(marker)).toBe(false)
    // In single quotes it is only text, as in a shell.
    expect(Result.getOrThrow(ConfigFile.parse(`X='$(touch ${marker})'`)).get("X")).toBe(`$(touch ${marker})`)
  })

  it("refuses what a shell would read otherwise, naming the line and never showing it", () => {
    const problem = (text: string) => Result.getFailure(ConfigFile.parse(text)).pipe(Option.getOrElse(() => "accepted"))
    expect(problem("A=1\nB=two words")).toBe(
      "config.env:2: a space outside quotes ends the value: put the whole value in quotes; the line is not shown, as it may hold a secret"
    )
    expect(problem("A='open")).toContain("config.env:1: unterminated single quote")
    expect(problem("A=${B")).toContain("config.env:1: unterminated ${")
    expect(problem("A=${#B}")).toContain("config.env:1: unsupported ${...} form")
    expect(problem("A=x;rm -rf y")).toContain("config.env:1: \";\" outside quotes would be a shell operator")
    expect(problem("A=x\\")).toContain("config.env:1: a line ending in \\ (a continuation) is not supported")
    expect(problem("sk-secret-pasted")).not.toContain("sk-secret")
    // A shell runs `A =1` as the command A, and `A= sk-secret` as the command sk-secret.
    expect(problem("A =1")).toBe(
      "config.env:1: a space before = makes this line a command in a shell, not a setting: write KEY=value; the line is not shown, as it may hold a secret"
    )
    expect(problem("export A = 1")).toContain("config.env:1: a space before =")
    expect(problem("A= sk-secret")).toBe(
      "config.env:1: a space after = ends the value in a shell (what follows would run as a command): write KEY=value, or KEY=\"value\"; " +
        "the line is not shown, as it may hold a secret"
    )
    expect(problem("A=  ")).toBe("accepted")
  })

  it("names keys of ours that nothing reads, with the key meant; leaves the user's own variables alone", () => {
    expect(unknownKeys(new Map([
      ["HISTROY_MAX", "10"],
      ["PLANCKCLAW_MODLE", "x"],
      ["PLANCKCLAW_SOMETHING_ELSE_ENTIRELY", "x"],
      ["HISTORY_MAX", "10"],
      ["MY_KEY", "x"],
      ["PLANCKCLAW_INTERACT_IN", "/tmp/p"]
    ]))).toEqual([
      "HISTROY_MAX (did you mean HISTORY_MAX?)",
      "PLANCKCLAW_MODLE (did you mean PLANCKCLAW_MODEL?)",
      "PLANCKCLAW_SOMETHING_ELSE_ENTIRELY"
    ])
  })

  it("names PLANCKCLAW_HOME set in config.env: it is read from the environment only, before config.env is found", () => {
    expect(unknownKeys(new Map([["PLANCKCLAW_HOME", "/elsewhere"], ["HISTORY_MAX", "10"]]))).toEqual([
      "PLANCKCLAW_HOME (read from the environment only, before config.env is found)"
    ])
  })

  it.effect("calls a config.env that is a link to nothing or a loop unreadable, not absent", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-config-"))
      const dangling = path.join(dir, "dangling.env")
      fs.symlinkSync(path.join(dir, "nowhere.env"), dangling)
      const loop = path.join(dir, "loop.env")
      fs.symlinkSync(path.join(dir, "loop2.env"), loop)
      fs.symlinkSync(loop, path.join(dir, "loop2.env"))
      for (const file of [dangling, loop]) {
        const error = yield* Effect.flip(ConfigFile.read(file, {}))
        expect(error.reason).toBe("unreadable")
        expect(error.message).toContain(`cannot read ${file}`)
      }
      expect((yield* ConfigFile.read(path.join(dir, "absent.env"), {})).size).toBe(0)
    }))

  it.effect("calls a config.env that cannot be looked up (its home is a file; EACCES alike) unreadable, not absent", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-config-"))
      const home = path.join(dir, "home-is-a-file")
      fs.writeFileSync(home, "")
      const file = path.join(home, "config.env")
      const error = yield* Effect.flip(ConfigFile.read(file, {}))
      expect(error.reason).toBe("unreadable")
      expect(error.message).toBe(`cannot read ${file}: ENOTDIR: not a directory, lstat '${file}'`)
    }))

  it.effect("lets flags override the environment, and the environment override the file", () =>
    Effect.gen(function*() {
      const provider = ConfigFile.provider({
        file: new Map([["A", "file"], ["B", "file"], ["C", "file"]]),
        environment: { B: "env", C: "env", D: "" },
        flags: new Map([["C", "flag"]])
      })
      const values = yield* Config.all([
        Config.String("A"),
        Config.String("B"),
        Config.String("C"),
        Config.String("D").pipe(Config.withDefault("unset"))
      ]).pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider))
      expect(values).toEqual(["file", "env", "flag", "unset"])
    }))

  it.effect("rejects bad agent settings naming the key and what was expected", () =>
    Effect.gen(function*() {
      const attempt = (settings: Record<string, string>) =>
        Effect.flip(AgentConfig).pipe(
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigFile.provider({ file: new Map(), environment: {}, flags: new Map(Object.entries(settings)) })),
          Effect.map((error) => ConfigErrors.describe(error))
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
