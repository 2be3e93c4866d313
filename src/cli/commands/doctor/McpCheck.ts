/**
 * Doctor's MCP lines: mcp.json read as the agent reads it (each refused
 * entry with why), then every server started, as the agent would start it,
 * and what it offers or why it failed; a variable of its entry left out as
 * a secret is said by name. The servers are stopped when the check ends.
 */
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import * as ClawsWithMcp from "../../../claws/mcp/ClawsWithMcp.js"
import type { Connection } from "../../../claws/mcp/McpConnection.js"
import { describeServer } from "../../../claws/mcp/McpNames.js"
import { serverEnvironment } from "../../../claws/mcp/McpEnvironment.js"
import * as ScriptClaws from "../../../claws/ScriptClaws.js"
import * as ConfigErrors from "../../../config/ConfigErrors.js"
import type { ToolProblem } from "../../../ports/Claws.js"
import { fail, type Finding, pass } from "./DoctorCheck.js"

/** An entry of `subject` refused, with its file and why. */
export const refusedEntries = (subject: string, problems: ReadonlyArray<ToolProblem>): ReadonlyArray<Finding> =>
  problems.map((problem) => fail(subject, `${problem.source}: ${problem.reason}`, "fix that entry (docs/mcp.md shows the format)"))

/**
 * Each of `connections` (by the name its file gives it) started: what it
 * offers, or why it failed; `subject` names it on its line.
 */
export const startedServers = (
  connections: Iterable<readonly [string, Connection]>,
  subject: (name: string) => string,
  withheldSecrets: ReadonlyArray<Redacted.Redacted<string>>
): Effect.Effect<ReadonlyArray<Finding>> =>
  Effect.map(
    Effect.forEach([...connections], ([name, connection]) =>
      Effect.map(connection.tools, ({ down, tools }): ReadonlyArray<Finding> => {
        const line = subject(name)
        const secretsLeft = connection.entry._tag === "Stdio"
          ? serverEnvironment(connection.entry.env, withheldSecrets).left
          : []
        const withheld = secretsLeft.length === 0
          ? []
          : [fail(line, `its env names ${secretsLeft.join(", ")}, which hold the agent's secrets: not passed`, "remove them from its entry")]
        if (down !== undefined) {
          return [fail(line, `${describeServer(connection.entry)}: ${down}`, "check its command or URL by hand"), ...withheld]
        }
        const names = tools.map((tool) => tool.name)
        return [pass(line, `${names.length} tool${names.length === 1 ? "" : "s"}: ${names.join(", ")}`), ...withheld]
      }), { concurrency: "unbounded" }),
    (each) => each.flat()
  )

/** A setting the check needs does not parse: one line on `subject`. */
export const settingsFailed = (subject: string) => (error: Parameters<typeof ConfigErrors.describe>[0]) =>
  Effect.succeed<ReadonlyArray<Finding>>([
    fail(subject, ConfigErrors.describe(error).replace(/^configuration error: /, ""), "fix that setting in config.env or the environment")
  ])

export const check: Effect.Effect<ReadonlyArray<Finding>> = Effect.gen(function*() {
  const { mcp, servers } = yield* ClawsWithMcp.makeMcp({ logDown: false })
  const { withheldSecrets } = yield* ScriptClaws.ScriptsConfig
  // No line without servers: doctor's report stays as it was for a home without mcp.json.
  if (servers.servers.length === 0 && servers.problems.length === 0) return []
  const started = yield* startedServers(mcp.connections, (name) => `mcp server ${name}`, withheldSecrets)
  return [...refusedEntries("mcp.json", servers.problems), ...started]
}).pipe(
  Effect.scoped,
  Effect.catchTag("ConfigError", settingsFailed("mcp servers"))
)
