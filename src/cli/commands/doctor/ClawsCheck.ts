/**
 * Doctor's claws lines: the claws directory, then every claw with what
 * `planckclaw tools` finds in it (the same discovery: its tools, or each
 * declaration that failed to parse and why); then whether claws start from
 * the spawn helper, tried with a command that does nothing.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { makeDiscovery } from "../../../claws/ClawDiscovery.js"
import * as ScriptClaws from "../../../claws/ScriptClaws.js"
import * as ConfigErrors from "../../../config/ConfigErrors.js"
import { describeError, errnoCode } from "../../../runtime/Errors.js"
import { printable } from "../../../runtime/Printable.js"
import * as SpawnHelper from "../../../runtime/process/SpawnHelper.js"
import { fail, type Finding, pass, skip } from "./DoctorCheck.js"

/** The claw a problem's source (`claws/dice.sh:3`) names. */
const clawOf = (source: string): string => path.basename(source.replace(/:\d+$/, ""))

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

export const check: Effect.Effect<ReadonlyArray<Finding>> = Effect.gen(function*() {
  const { directory } = yield* ScriptClaws.ScriptsConfig
  const absolute = path.resolve(directory)
  const stat = Result.try(() => fs.statSync(absolute))
  if (Result.isFailure(stat)) {
    const what = errnoCode(stat.failure) === "ENOENT" ? "does not exist" : `cannot be read: ${describeError(stat.failure)}`
    return [fail("claws", `${absolute} ${what}`, "create it and put your claws (*.sh) in it, or set CLAWS_DIR")]
  }
  if (!stat.success.isDirectory()) return [fail("claws", `${absolute} is not a directory`, "set CLAWS_DIR to the directory of your claws")]
  // Claws are `*.sh` files that are not hidden, as discovery lists them.
  const names = Result.getOrElse(
    Result.try(() => fs.readdirSync(absolute).filter((name) => name.endsWith(".sh") && !name.startsWith(".")).sort()),
    () => []
  )
  const catalog = makeDiscovery(directory).scan()
  // Discovery's sources are escaped (see Printable), names here too where they are shown or compared with one.
  const unreadableDir = catalog.problems.find((problem) => problem.source === printable(directory))
  if (unreadableDir !== undefined) return [fail("claws", `${absolute}: ${unreadableDir.reason}`, "make it readable, or set CLAWS_DIR")]

  const toolsOf = (name: string) => catalog.tools.filter((tool) => path.basename(catalog.files.get(tool.name) ?? "") === name)
  const problemsOf = (name: string) => catalog.problems.filter((problem) => clawOf(problem.source) === printable(name))
  const summary = pass(
    "claws",
    `${absolute}: ${plural(catalog.tools.length, "tool")} from ${plural(names.length, "claw")}` +
      (catalog.problems.length > 0 ? `, ${plural(catalog.problems.length, "declaration")} skipped` : "")
  )
  const perClaw = names.flatMap((name): ReadonlyArray<Finding> => {
    const tools = toolsOf(name).map((tool) => tool.name)
    const claw = `claw ${printable(name)}`
    const problems = problemsOf(name).map((problem) =>
      fail(claw, `${problem.source}: ${problem.reason}`, "fix that #TOOLS: line (one JSON tool declaration)"))
    if (tools.length > 0) return [pass(claw, tools.join(", ")), ...problems]
    return problems.length > 0 ? problems : [skip(claw, "declares no tools (no #TOOLS: line)")]
  })
  // The command's helper (provided at its entry: a layer is shared by reference),
  // or, the check run alone, one of its own, ended with it.
  const helper = yield* Effect.provide(SpawnHelper.probe, SpawnHelper.layer)
  const starter = Result.match(helper, {
    onSuccess: (pid) => pass("claw starter", `the spawn helper (pid ${pid}) starts claws`),
    onFailure: (why) =>
      fail(
        "claw starter",
        `no spawn helper: ${why}; claws are started from the agent's own process, which stops its turns for each start`,
        "run `npm run build` in planckclaw's directory, or install it again"
      )
  })
  return [summary, ...perClaw, starter]
}).pipe(
  Effect.catchTag("ConfigError", (error) =>
    Effect.succeed([
      fail("claws", ConfigErrors.describe(error).replace(/^configuration error: /, ""), "fix that setting in config.env or the environment")
    ]))
)
