/**
 * Help that helps: every command of src/cli/Cli.ts has a HelpText entry naming
 * each of its options; every `--help`, piped, is plain text whose usage
 * lines start with `planckclaw` and which ends with an example; `help
 * config` lists every key (each declared once, its Config built from the
 * declaration: test/config/Settings.test.ts);
 * `--log-level` changes what a command logs; `--version` is one line.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type * as Command from "effect/cli/Command"
import * as Completions from "effect/cli/Completions"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { subcommands } from "../../src/cli/Cli.js"
import { allKeys } from "../../src/cli/HelpConfig.js"
import * as HelpText from "../../src/cli/HelpText.js"
import * as Cli from "../support/Cli.js"
import { eventually, tempDir } from "../support/Sandbox.js"

const ESC = "\u001b"

type AnyCommand = Command.Command.Any

/** The flags effect/cli parses for a command and its subcommands (`memory export`), as its completions list them (built-ins left out). */
const flagsOf = (command: Completions.CommandDescriptor): Array<string> => [
  ...command.flags.map((flag) => `--${flag.name}`),
  ...command.subcommands.flatMap(flagsOf)
]

const declaredOptions = (command: AnyCommand): Array<string> => [...new Set(flagsOf(Completions.fromCommand(command)))]

const commandName = (command: AnyCommand): string => command.name

describe("help entries", () => {
  it("every command has an entry, and the entry describes every option it parses", () => {
    for (const command of subcommands as unknown as ReadonlyArray<AnyCommand>) {
      const name = commandName(command)
      const entry = HelpText.commands.find((help) => help.name === name)
      expect(entry, name).toBeDefined()
      const described = entry!.options.map((option) => option.name.split(" ")[0])
      expect(described.sort(), name).toEqual(declaredOptions(command).sort())
      for (const option of [...entry!.options, ...(entry!.arguments ?? [])]) {
        expect(option.description.length, `${name} ${option.name}`).toBeGreaterThan(10)
      }
      expect(entry!.examples.length, name).toBeGreaterThan(0)
    }
  })

  it("a description that wraps goes on in the column it starts in", () => {
    const pages = [HelpText.overview(false), ...HelpText.commands.map((command) => HelpText.commandHelp(command, false))]
    let continued = 0
    for (const page of pages) {
      const lines = page.split("\n")
      lines.forEach((line, index) => {
        // An entry: two spaces, its name, then its description after two spaces or more.
        const entry = /^(  \S.*?\s{2,})\S/.exec(line)
        if (entry === null || line.startsWith("  $ ")) return
        const column = entry[1]!.length
        for (const next of lines.slice(index + 1)) {
          if (!/^\s+\S/.test(next) || /^  \S/.test(next)) break
          continued++
          expect(next.length - next.trimStart().length, `${line}\n${next}`).toBe(column)
        }
      })
    }
    expect(continued).toBeGreaterThan(10)
  })

  it("colour only on a terminal without NO_COLOR", () => {
    expect(HelpText.colorAllowed({ isTTY: true }, {})).toBe(true)
    expect(HelpText.colorAllowed({ isTTY: false }, {})).toBe(false)
    expect(HelpText.colorAllowed({ isTTY: true }, { NO_COLOR: "1" })).toBe(false)
    expect(HelpText.colorAllowed({ isTTY: true }, { TERM: "dumb" })).toBe(false)
    expect(HelpText.overview(true)).toContain(ESC)
    expect(HelpText.overview(false)).not.toContain(ESC)
  })
})

describe("planckclaw help config", () => {
  it("README's and docs/' examples run the command as installed: no `npx planckclaw` (the name is not on the registry)", () => {
    const readme = fs.readFileSync(path.join(Cli.REPO, "README.md"), "utf8")
    const docs = fs.readdirSync(path.join(Cli.REPO, "docs")).filter((name) => name.endsWith(".md"))
    expect(docs.length).toBeGreaterThan(5)
    for (const page of [readme, ...docs.map((name) => fs.readFileSync(path.join(Cli.REPO, "docs", name), "utf8"))]) {
      const blocks = [...page.matchAll(/```(?:sh)?\n([\s\S]*?)```/g)].map((match) => match[1]!)
      expect(blocks.filter((block) => block.includes("npx planckclaw"))).toEqual([])
    }
    expect(readme).toContain("not published on the npm registry")
  })

  it("config.env.example and the tables of docs/configuration.md mention every key", () => {
    const example = fs.readFileSync(path.join(Cli.REPO, "config.env.example"), "utf8")
    const reference = fs.readFileSync(path.join(Cli.REPO, "docs", "configuration.md"), "utf8")
    // A key counts where it opens a table row, as the reference lists it.
    const rows = new Set([...reference.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((match) => match[1]!))
    for (const { key } of allKeys) {
      if (key !== "PLANCKCLAW_HOME") expect(example, key).toContain(`${key}=`)
      expect(rows.has(key), key).toBe(true)
    }
    expect([...rows].filter((key) => !allKeys.some((entry) => entry.key === key))).toEqual([])
  })
})

describe("help and version (built command)", () => {
  const topics = [...HelpText.commands.map((command) => [command.name, "--help"]), ["--help"], ["help"], ["help", "config"], ["-h"]]

  it.live("every --help, piped, is plain text: usage from planckclaw, options described, an example last", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      for (const args of topics) {
        const result = yield* Cli.run(args, { cwd, env: Cli.baseEnv({ HOME: cwd }) })
        const label = args.join(" ")
        expect(result.code, label).toBe(0)
        expect(result.stdout, label).not.toContain(ESC)
        expect(result.stdout, label).not.toContain("A user-defined piece of text")
        expect(result.stdout, label).not.toContain("$ run")
        const lines = result.stdout.trimEnd().split("\n")
        const usage = lines.indexOf("Usage")
        if (usage !== -1) expect(lines[usage + 1]!.trim(), label).toMatch(/^planckclaw /)
        expect(lines.slice(-4).join("\n"), label).toMatch(/Example\n(?:.*\n)*\s+\$ planckclaw /)
      }
      const config = yield* Cli.run(["help", "config"], { cwd, env: Cli.baseEnv({}) })
      for (const { key } of allKeys) expect(config.stdout).toContain(`  ${key}\n`)
      const unknown = yield* Cli.run(["help", "nonsense"], { cwd, env: Cli.baseEnv({}) })
      expect(unknown.code).toBe(2)
      expect(unknown.stderr).toContain("no help on 'nonsense'")
      const unknownCommand = yield* Cli.run(["nonsense", "--help"], { cwd, env: Cli.baseEnv({}) })
      expect(unknownCommand.code).toBe(2)
      expect(unknownCommand.stderr).toBe("planckclaw: unknown command 'nonsense': see planckclaw --help\n")
    }), 120_000) // a dozen processes on a loaded machine; nothing is asserted about speed

  it.live("--version is one line; a usage error is plain text when piped", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const version = yield* Cli.run(["--version"], { cwd, env: Cli.baseEnv({}) })
      const pkg = JSON.parse(fs.readFileSync(path.join(Cli.REPO, "package.json"), "utf8")) as { version: string }
      expect(version.stdout).toBe(`${pkg.version}\n`)
      const bad = yield* Cli.run(["tools", "--bogus"], { cwd, env: Cli.baseEnv({ HOME: cwd }) })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain("--bogus")
      expect(bad.stderr).not.toContain(ESC)
    }))

  it.live("a usage mistake is one planckclaw: line, with the nearest right name and which --help to read, exit 2", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const env = Cli.baseEnv({ HOME: cwd })
      const mistakes: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["rn"], "unknown command 'rn' (did you mean run?): see planckclaw --help"],
        [["serve", "--htp", "127.0.0.1:0"], "unknown option --htp for serve (did you mean --http?): see planckclaw serve --help"],
        // A run line goes to the command line holding only `run` (bin.ts): the same words.
        [["run", "--bridg", "none"], "unknown option --bridg for run (did you mean --bridge?): see planckclaw run --help"],
        [["run", "--no-debug"], "unknown option --no-debug for run: see planckclaw run --help"],
        [["bridge", "clii"], "invalid NAME 'clii' for bridge: expected cli, discord, anthropic, openai or scripts (did you mean cli?): see planckclaw bridge --help"],
        [["serve", "--bridge", "discrod"], "invalid value 'discrod' for --bridge: expected none or discord (did you mean discord?): see planckclaw serve --help"],
        [["usage", "--since"], "--since needs a value: see planckclaw usage --help"],
        [["memory", "export", "--agent", "alice"], "memory export needs DIR: see planckclaw memory export --help"],
        [["tools", "extra"], "unexpected argument 'extra' for tools: see planckclaw tools --help"],
        [["tols", "--help"], "unknown command 'tols' (did you mean tools?): see planckclaw --help"]
      ]
      for (const [args, line] of mistakes) {
        const result = yield* Cli.run(args, { cwd, env })
        expect(result.stderr, args.join(" ")).toBe(`planckclaw: ${line}\n`)
        expect(result.stdout, args.join(" ")).toBe("")
        expect(result.code, args.join(" ")).toBe(2)
      }
    }), 120_000)

  it.live("--log-level works after the command's name too: serve --log-level debug starts, logging at debug", () =>
    Effect.scoped(Effect.gen(function*() {
      const cwd = fs.realpathSync(yield* tempDir())
      const env = Cli.baseEnv({ HOME: cwd, ANTHROPIC_API_KEY: "test-key-not-secret", PLANCKCLAW_AGENTS_DIR: path.join(cwd, "agents") })
      const serve = yield* Cli.start(["serve", "--log-level", "debug", "--http", "127.0.0.1:0"], { cwd, env })
      const started = yield* eventually("serve's address", () => Effect.runSync(serve.stderrSoFar).match(/HTTP API on \S+/)?.[0])
      expect(started).toMatch(/^HTTP API on 127\.0\.0\.1:\d+$/)
      expect(yield* serve.stderrSoFar).toContain("planckclaw debug: ")
      serve.process.kill("SIGTERM")
      expect((yield* serve.done).code).toBe(0)
    })))

  it.live("completions offer the values of --brain, --bridge and --claw, and only options the help describes", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      const fish = yield* Cli.run(["--completions", "fish"], { cwd, env: Cli.baseEnv({ HOME: cwd }) })
      expect(fish.code).toBe(0)
      const line = (command: string, flag: string) =>
        fish.stdout.split("\n").find((entry) => entry.includes(`__fish_seen_subcommand_from ${command};`) && entry.includes(` -l ${flag} `))
      expect(line("run", "bridge")).toContain("-a 'cli discord none'")
      expect(line("run", "brain")).toContain("-a 'anthropic openai none'")
      expect(line("run", "claw")).toContain("-a 'scripts none'")
      expect(line("serve", "brain")).toContain("-a 'anthropic openai'")
      expect(line("serve", "bridge")).toContain("-a 'none discord'")
      expect(line("doctor", "brain")).toContain("-a 'anthropic openai none'")
      // Every option a completion offers is one the command's help describes.
      for (const entry of fish.stdout.split("\n")) {
        const command = /__fish_seen_subcommand_from (\w+)/.exec(entry)?.[1]
        const flag = / -l (\S+)/.exec(entry)?.[1] ?? /-a '--(\S+)'/.exec(entry)?.[1]
        if (command === undefined || flag === undefined) continue
        const help = HelpText.commands.find((candidate) => candidate.name === command)!
        expect(help.options.map((option) => option.name.split(" ")[0]), `${command} --${flag}`).toContain(`--${flag}`)
      }
      const bash = yield* Cli.run(["--completions", "bash"], { cwd, env: Cli.baseEnv({ HOME: cwd }) })
      expect(bash.stdout).toContain("'anthropic' 'openai' 'none'")
      expect(bash.stdout).not.toContain("no-debug")
    }))

  it.live("--log-level chooses what a command logs", () =>
    Effect.gen(function*() {
      const cwd = fs.realpathSync(yield* tempDir())
      fs.mkdirSync(path.join(cwd, "claws"))
      fs.writeFileSync(path.join(cwd, "claws/broken.sh"), "#!/bin/sh\n#TOOLS:{oops\n")
      fs.writeFileSync(path.join(cwd, "config.env"), "# claws/ and memory/ here\n")
      const env = Cli.baseEnv({ HOME: cwd })
      const normal = yield* Cli.run(["tools"], { cwd, env })
      expect(normal.stderr).toContain("planckclaw warn: claw problem")
      const quiet = yield* Cli.run(["tools", "--log-level", "error"], { cwd, env })
      expect(quiet.code).toBe(0)
      expect(quiet.stdout).toContain("broken.sh:2")
      expect(quiet.stderr).toBe("")
    }))
})
