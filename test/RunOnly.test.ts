/**
 * bin.ts parses a `run` with a command line holding only `run` (so a start
 * loads less). A mistake on a `run` command line must get the same answer
 * from it as from the whole command line: the same lines, the same failure.
 */
import * as Command from "effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeServices"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { describe, expect, it } from "vitest"
import { command } from "../src/Cli.js"
import { runOnly } from "../src/RunCommand.js"

/** Parses `planckclaw ARGS` with `line`; what it printed and how it ended. */
const parse = (line: typeof command | typeof runOnly, args: ReadonlyArray<string>) => {
  const printed: Array<string> = []
  const record = (...values: ReadonlyArray<unknown>) => Effect.sync(() => void printed.push(values.map(String).join(" ")))
  const console = new Proxy({} as Console.Console, {
    get: (_, key) => key === Console.TypeId ? Console.TypeId : key === "unsafe" ? globalThis.console : record
  })
  const run = Command.run(line as typeof command, { name: "planckclaw", version: "1.2.3" })(["node", "planckclaw", ...args])
  const exit = Effect.runSync(Effect.exit(run.pipe(Effect.withConsole(console), Effect.provide(NodeContext.layer))))
  return { printed, failed: Exit.isFailure(exit), failure: Exit.isFailure(exit) ? String(exit.cause) : "" }
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
    expect(whole.failed).toBe(true)
    expect(parse(runOnly, args)).toEqual(whole)
  })
})
