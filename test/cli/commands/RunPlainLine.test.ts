/**
 * A plain `run` line is read without effect/cli (RunCommand.plainRunOptions):
 * it must give the very options effect/cli gives, and leave every other
 * line, mistakes included, to effect/cli. bin/planckclaw tells the plain
 * lines by the same rule (code-cache.cjs's forRunBundle), to send them to the
 * run-only bundle (all but `--bridge discord`, which that bundle leaves out)
 * and the others to the whole command line.
 */
import { createRequire } from "node:module"
import * as Command from "effect/cli/Command"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { describe, expect, it } from "vitest"
import { plainRunOptions, type RunOptions, runOptions } from "../../../src/cli/commands/RunCommand.js"

const { forRunBundle } = createRequire(import.meta.url)("../../../bin/code-cache.cjs") as {
  readonly forRunBundle: (args: ReadonlyArray<string>) => boolean
}

/** What effect/cli hands `run`'s handler for `planckclaw ARGS`. */
const parsedByCli = (args: ReadonlyArray<string>): RunOptions => {
  let seen: RunOptions | undefined
  const run = Command.make("run", runOptions, (options) => Effect.sync(() => void (seen = options)))
  const line = Command.make("planckclaw").pipe(Command.withSubcommands([run]))
  Effect.runSync(Command.runWith(line, { version: "1.2.3" })(args).pipe(Effect.provide(NodeServices.layer)))
  if (seen === undefined) throw new Error(`effect/cli ran no handler for ${JSON.stringify(args)}`)
  return seen
}

describe("a plain `run` line", () => {
  it.each([
    [["run"]],
    [["run", "--bridge", "none", "--brain", "none", "--claw", "none"]],
    [["run", "--claw", "scripts", "--bridge", "cli"]],
    [["run", "--debug"]],
    [["run", "--brain", "openai", "--debug", "--bridge", "discord"]],
    [["run", "--bridge", "./bridges/my bridge.sh", "--claw", "/usr/local/bin/claws"]],
    [["run", "--debug", "--brain", "run"]],
    [["run", "--bridge", "discord"]],
    [["run", "--bridge", "./discord"]],
    [["run", "--model", "qwen3:8b"]],
    [["run", "--brain", "openai", "--model", "gpt-4.1-mini", "--debug"]],
    [["run", "--verbose"]],
    [["run", "--verbose", "--bridge", "none", "--debug"]]
  ])("planckclaw %j: the options effect/cli gives", (args) => {
    expect(plainRunOptions(args)).toEqual(Option.some(parsedByCli(args)))
    expect(forRunBundle(args)).toBe(parsedByCli(args).bridge !== "discord")
  })

  it.each([
    [["serve"]],
    [["--debug", "run"]],
    [["run", "--bridge"]],
    [["run", "--bridge", ""]],
    [["run", "--bridge", "--debug"]],
    [["run", "--bridge=none"]],
    [["run", "--bridge", "none", "--bridge", "cli"]],
    [["run", "--debug", "--debug"]],
    [["run", "--verbose", "--verbose"]],
    [["run", "--verbose", "true"]],
    [["run", "--model", "a", "--model", "b"]],
    [["run", "--model"]],
    [["run", "--model", "--debug"]],
    [["run", "--debug", "true"]],
    [["run", "--Bridge", "none"]],
    [["run", "--log-level", "debug"]],
    [["run", "--help"]],
    [["run", "extra"]],
    [["run", "--bogus"]],
    [["run", "constructor", "x"]],
    [["run", "toString", "x"]]
  ])("planckclaw %j: left to effect/cli", (args) => {
    expect(plainRunOptions(args)).toEqual(Option.none())
    expect(forRunBundle(args)).toBe(false)
  })
})
