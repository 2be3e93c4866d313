/**
 * bin.ts parses a `run` with a command line holding only `run` (so a start
 * loads less). A mistake on a `run` command line must get the same answer
 * from it as from the whole command line: the same lines, the same failure.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { describe, expect, it } from "vitest"
import { command } from "../../src/cli/Cli.js"
import { parseAndRun } from "../../src/cli/CliAnswer.js"
import { runOnly } from "../../src/cli/commands/RunCommand.js"
import * as SpawnHelper from "../../src/runtime/process/SpawnHelper.js"

/** Parses `planckclaw ARGS` with `line` as bin.ts does (CliAnswer); what it printed and how it ended. */
const parse = (line: typeof command | typeof runOnly, args: ReadonlyArray<string>) => {
  const printed: Array<string> = []
  const record = (...values: ReadonlyArray<unknown>) => void printed.push(values.map(String).join(" "))
  const console = new Proxy({} as Console.Console, { get: () => record })
  const exit = Effect.runSync(Effect.exit(parseAndRun(line, args).pipe(Effect.provideService(Console.Console, console), Effect.provide(SpawnHelper.layer))))
  return { printed, exit: Exit.isSuccess(exit) ? exit.value : String(exit.cause) }
}

describe("`run` parsed by the run-only command line", () => {
  it.each([
    [["run", "--bogus"]],
    [["run", "extra"]],
    [["run", "--bridge"]],
    [["run", "--brain"]],
    [["run", "--claw"]],
    [["run", "--debug", "maybe"]],
    [["run", "--log-level", "nonsense"]],
    [["run", "--bridge", "none", "--bridge", "cli", "--bogus"]]
  ])("planckclaw %j: the same answer as the whole command line", (args) => {
    const whole = parse(command, args)
    // A usage mistake: said (without the command's help), and the exit code 2.
    expect(whole.exit).toBe(2)
    expect(whole.printed).toHaveLength(1)
    expect(parse(runOnly, args)).toEqual(whole)
  })
})
