/**
 * Whether a start's home has an mcp.json, read before a run starts: a run
 * with one starts from the bundle that holds the MCP client (RunMain).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mcpConfigPresent } from "../../../src/claws/mcp/McpPresence.js"
import * as Sandbox from "../../support/Sandbox.js"

describe("mcpConfigPresent", () => {
  it.effect("finds mcp.json in the home, or the file PLANCKCLAW_MCP_CONFIG names in the environment or config.env", () =>
    Effect.gen(function*() {
      const home = yield* Sandbox.tempDir("planckclaw-mcp-presence-")
      const env = { PLANCKCLAW_HOME: home, HOME: home }
      expect(mcpConfigPresent(env, "/")).toBe(false)
      fs.writeFileSync(path.join(home, "mcp.json"), "{}")
      expect(mcpConfigPresent(env, "/")).toBe(true)
      fs.rmSync(path.join(home, "mcp.json"))
      fs.writeFileSync(path.join(home, "servers.json"), "{}")
      expect(mcpConfigPresent({ ...env, PLANCKCLAW_MCP_CONFIG: path.join(home, "servers.json") }, "/")).toBe(true)
      expect(mcpConfigPresent({ ...env, PLANCKCLAW_MCP_CONFIG: path.join(home, "none.json") }, "/")).toBe(false)
      // Relative in config.env: from the home.
      fs.writeFileSync(path.join(home, "config.env"), "export PLANCKCLAW_MCP_CONFIG=\"servers.json\"\n")
      expect(mcpConfigPresent(env, "/")).toBe(true)
      fs.writeFileSync(path.join(home, "config.env"), "export PLANCKCLAW_MCP_CONFIG=\"other.json\"\n")
      expect(mcpConfigPresent(env, "/")).toBe(false)
    }))
})
