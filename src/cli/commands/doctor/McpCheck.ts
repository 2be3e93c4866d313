/**
 * Doctor's MCP lines: mcp.json read as the agent reads it (each refused
 * entry with why), then every server started, as the agent would start it,
 * and what it offers or why it failed; a variable of its entry left out as
 * a secret is said by name. The servers are stopped when the check ends.
 */
import * as Effect from "effect/Effect"
import * as ClawsWithMcp from "../../../claws/mcp/ClawsWithMcp.js"
import { describeServer } from "../../../claws/mcp/McpNames.js"
import { serverEnvironment } from "../../../claws/mcp/McpEnvironment.js"
import * as ScriptClaws from "../../../claws/ScriptClaws.js"
import * as ConfigErrors from "../../../config/ConfigErrors.js"
import { fail, type Finding, pass } from "./DoctorCheck.js"

export const check: Effect.Effect<ReadonlyArray<Finding>> = Effect.gen(function*() {
  const { mcp, servers } = yield* ClawsWithMcp.makeMcp({ logDown: false })
  const { withheldSecrets } = yield* ScriptClaws.ScriptsConfig
  // No line without servers: doctor's report stays as it was for a home without mcp.json.
  if (servers.servers.length === 0 && servers.problems.length === 0) return []
  const refused = servers.problems.map((problem) =>
    fail("mcp.json", `${problem.source}: ${problem.reason}`, "fix that entry (docs/mcp.md shows the format)"))
  const started = yield* Effect.forEach([...mcp.connections.values()], (connection) =>
    Effect.map(connection.tools, ({ down, tools }): ReadonlyArray<Finding> => {
      const subject = `mcp server ${connection.entry.name}`
      const secretsLeft = connection.entry._tag === "Stdio"
        ? serverEnvironment(connection.entry.env, withheldSecrets).left
        : []
      const withheld = secretsLeft.length === 0
        ? []
        : [fail(subject, `its env names ${secretsLeft.join(", ")}, which hold the agent's secrets: not passed`, "remove them from its entry")]
      if (down !== undefined) {
        return [fail(subject, `${describeServer(connection.entry)}: ${down}`, "check its command or URL by hand"), ...withheld]
      }
      const names = tools.map((tool) => tool.name)
      return [pass(subject, `${names.length} tool${names.length === 1 ? "" : "s"}: ${names.join(", ")}`), ...withheld]
    }), { concurrency: "unbounded" })
  return [...refused, ...started.flat()]
}).pipe(
  Effect.scoped,
  Effect.catchTag("ConfigError", (error) =>
    Effect.succeed([
      fail("mcp servers", ConfigErrors.describe(error).replace(/^configuration error: /, ""), "fix that setting in config.env or the environment")
    ]))
)
