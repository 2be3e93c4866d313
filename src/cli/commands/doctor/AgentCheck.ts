/**
 * Doctor's lines for `--agent ID`, an agent of `serve`: its directory under
 * PLANCKCLAW_AGENTS_DIR (there, and this user's to read and write), then its
 * own mcp.json as serve reads it (AgentMcp): each refused entry with the
 * file and why, each server started from a pool as serve starts it, and
 * what it offers or why it failed. The servers are stopped when it ends.
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as ScriptClaws from "../../../claws/ScriptClaws.js"
import { AgentsDir, McpServersMax } from "../../../config/settings/Serve.js"
import * as AgentMcp from "../../../hosts/serve/AgentMcp.js"
import * as AgentStatus from "../../../hosts/serve/AgentStatus.js"
import * as McpPool from "../../../hosts/serve/McpPool.js"
import { describeError } from "../../../runtime/Errors.js"
import { fail, type Finding, pass } from "./DoctorCheck.js"
import * as McpCheck from "./McpCheck.js"

/** Whether this user can list, read and write in `directory` (serve keeps the agent's memory there). */
const usable = (directory: string): string | undefined => {
  const access = Result.try(() => fs.accessSync(directory, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK))
  return Result.isSuccess(access) ? undefined : describeError(access.failure)
}

/** The agent's own mcp.json: refused entries, then its servers started; one line when it has none. */
const ownMcp = (id: string, directory: string) =>
  Effect.gen(function*() {
    const { withheldSecrets } = yield* ScriptClaws.ScriptsConfig
    const own = yield* AgentMcp.ownServers(directory, yield* McpPool.fromSettings({ logDown: false }))
    const subject = `mcp.json of agent ${id}`
    if (own === undefined) {
      const file = AgentMcp.fileIn(directory)
      const none = fs.existsSync(file) ? `${file} names no server` : `none (no ${file})`
      return [pass(subject, `${none}: the agent is offered the home's MCP servers alone`)]
    }
    const started = yield* McpCheck.startedServers(own.connections, (name) => `mcp server ${name} of agent ${id}`, withheldSecrets)
    return [
      ...McpCheck.refusedEntries(subject, own.config.problems),
      ...own.refused.map((problem) =>
        fail(subject, `${problem.source}: ${problem.reason}`, `${McpServersMax.key} bounds the servers of serve's agents at once`)
      ),
      ...started
    ]
  }).pipe(Effect.scoped)

export const check = (raw: string): Effect.Effect<ReadonlyArray<Finding>> =>
  Effect.gen(function*() {
    const found = yield* Effect.result(AgentStatus.existingAgent(raw))
    if (Result.isFailure(found)) {
      const error = found.failure
      return [
        error._tag === "AgentIdRefused"
          ? fail("agent", error.message, `give the name of its directory under ${AgentsDir.key}`)
          : fail("agent", error.message, `check the id, and ${AgentsDir.key} (serve's agents)`)
      ]
    }
    const { id, directory } = found.success
    const unusable = usable(directory)
    if (unusable !== undefined) {
      return [fail(`agent ${id}`, `${directory} cannot be read and written by this user: ${unusable}`, `chmod u+rwx ${directory}`)]
    }
    return [pass(`agent ${id}`, directory), ...yield* ownMcp(id, directory)]
  }).pipe(Effect.catchTag("ConfigError", McpCheck.settingsFailed("agent")))
