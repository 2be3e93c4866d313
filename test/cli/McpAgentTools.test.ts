/**
 * `planckclaw tools --agent ID` and `planckclaw doctor --agent ID` (the
 * built command): an agent of serve's own mcp.json, its servers started
 * and listed as coming from its file, replacing the home's of the same
 * name; a broken file refused with the file and the reason; an unknown
 * agent or a bad id refused; without --agent, nothing of an agent.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cli from "../support/Cli.js"
import * as McpServers from "../support/McpServers.js"
import { sandbox } from "../support/Sandbox.js"

const everythingLine = `${process.execPath} ${McpServers.everythingEntry} stdio`

/**
 * A home whose mcp.json names `files` and `shared` (server-everything); agent
 * alice's own names `files` as server-filesystem and a refused `bad`; carol's
 * is no JSON; bob has none.
 */
const home = Effect.gen(function*() {
  const box = yield* sandbox({}, "planckclaw-mcp-agent-")
  fs.writeFileSync(box.path("mcp.json"), JSON.stringify({
    mcpServers: { files: McpServers.everything(), shared: McpServers.everything() }
  }))
  for (const agent of ["alice", "bob", "carol"]) fs.mkdirSync(box.path(`agents/${agent}`), { recursive: true })
  fs.writeFileSync(box.path("agents/alice/mcp.json"), JSON.stringify({
    mcpServers: { files: McpServers.filesystem(box.dir), bad: { url: "ftp://example.test" } }
  }))
  fs.writeFileSync(box.path("agents/carol/mcp.json"), "{\"mcpServers\": ")
  const env = { ...box.env, PLANCKCLAW_HOME: box.dir }
  const doctorEnv = { ...env, ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: "http://127.0.0.1:9" }
  return { box, env, doctorEnv }
})

describe("tools and doctor with --agent: an agent's own mcp.json", () => {
  it.live("tools --agent lists the agent's own servers from its file, in place of the home's of the same name", () =>
    Effect.gen(function*() {
      const { box, env } = yield* home
      const file = box.path("agents/alice/mcp.json")
      const result = yield* Cli.run(["tools", "--agent", "alice"], { cwd: box.dir, env })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(`MCP server files (${everythingLine}) of the home's mcp.json: replaced for agent alice by its own\n`)
      expect(result.stdout).toContain(
        `Tools of MCP server files (${process.execPath} ${McpServers.filesystemEntry} ${box.dir}) from ${file}:\n`
      )
      expect(result.stdout).toContain("  mcp__files__read_text_file  ")
      expect(result.stdout).not.toContain("mcp__files__echo")
      expect(result.stdout).toContain(`Tools of MCP server shared (${everythingLine}):\n  mcp__shared__echo  Echoes back the input string\n`)
      expect(result.stdout).toContain(`  ${file}: server "bad": must be an http:// or https:// URL`)
      expect(result.stderr).toBe("")

      // Without --agent the home's `files` is listed, and nothing of alice's.
      const plain = yield* Cli.run(["tools"], { cwd: box.dir, env })
      expect(plain.code).toBe(0)
      expect(plain.stdout).toContain(`Tools of MCP server files (${everythingLine}):\n  mcp__files__echo  Echoes back the input string\n`)
      expect(plain.stdout).not.toContain("alice")
      expect(plain.stdout).not.toContain("replaced")
    }), 60_000)

  it.live("tools --agent of an agent without an mcp.json: the listing without --agent and a line saying so; a broken one refused with file and reason", () =>
    Effect.gen(function*() {
      const { box, env } = yield* home
      const plain = yield* Cli.run(["tools"], { cwd: box.dir, env })
      const bob = yield* Cli.run(["tools", "--agent", "bob"], { cwd: box.dir, env })
      expect(bob.code).toBe(0)
      expect(bob.stdout).toBe(
        `${plain.stdout}Agent bob has no mcp.json of its own (${box.path("agents/bob/mcp.json")}): it is offered the home's MCP servers alone.\n`
      )
      const carol = yield* Cli.run(["tools", "--agent", "carol"], { cwd: box.dir, env })
      expect(carol.code).toBe(0)
      expect(carol.stdout).toContain(`  ${box.path("agents/carol/mcp.json")}: not JSON: Unexpected end of JSON input\n`)
      expect(carol.stdout).toContain("  mcp__files__echo  ")
    }), 60_000)

  it.live("tools --agent refuses an unknown agent and a bad id, listing nothing", () =>
    Effect.gen(function*() {
      const { box, env } = yield* home
      const missing = yield* Cli.run(["tools", "--agent", "nobody"], { cwd: box.dir, env })
      expect(missing.code).toBe(1)
      expect(missing.stderr).toBe(`planckclaw: no agent nobody: ${box.path("agents/nobody")} is not a directory\n`)
      expect(missing.stdout).toBe("")
      const bad = yield* Cli.run(["tools", "--agent", "../alice"], { cwd: box.dir, env })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toMatch(/^planckclaw: agent id "\.\.\/alice" is not allowed.*\n$/)
      expect(bad.stdout).toBe("")
    }), 60_000)

  it.live("doctor --agent checks the agent's directory and own mcp.json: each server started, each refused entry failing with file and reason", () =>
    Effect.gen(function*() {
      const { box, doctorEnv } = yield* home
      const alice = yield* Cli.run(["doctor", "--agent", "alice"], { cwd: box.dir, env: doctorEnv })
      expect(alice.code).toBe(1)
      const lines = alice.stdout.split("\n")
      expect(lines).toContain(`✔ agent alice: ${box.path("agents/alice")}`)
      expect(lines).toContainEqual(expect.stringMatching(/^✔ mcp server files of agent alice: 14 tools: read_file, read_text_file, .*list_allowed_directories$/))
      expect(lines).toContain(
        `✘ mcp.json of agent alice: ${box.path("agents/alice/mcp.json")}: server "bad": must be an http:// or https:// URL at ["url"] → fix that entry (docs/mcp.md shows the format)`
      )
      // The home's servers are checked as before: other agents are offered them.
      expect(lines).toContainEqual(expect.stringMatching(/^✔ mcp server files: 12 tools: echo, /))

      const carol = yield* Cli.run(["doctor", "--agent", "carol"], { cwd: box.dir, env: doctorEnv })
      expect(carol.stdout.split("\n")).toContain(
        `✘ mcp.json of agent carol: ${box.path("agents/carol/mcp.json")}: not JSON: Unexpected end of JSON input → fix that entry (docs/mcp.md shows the format)`
      )
      const bob = yield* Cli.run(["doctor", "--agent", "bob"], { cwd: box.dir, env: doctorEnv })
      expect(bob.stdout.split("\n")).toContain(
        `✔ mcp.json of agent bob: none (no ${box.path("agents/bob/mcp.json")}): the agent is offered the home's MCP servers alone`
      )

      const plain = yield* Cli.run(["doctor"], { cwd: box.dir, env: doctorEnv })
      expect(plain.stdout).not.toContain("agent alice")
      expect(plain.stdout.split("\n").length).toBe(lines.length - 3)
    }), 60_000)

  it.live("doctor --agent fails its line for an unknown agent or a bad id", () =>
    Effect.gen(function*() {
      const { box, doctorEnv } = yield* home
      const missing = yield* Cli.run(["doctor", "--agent", "nobody"], { cwd: box.dir, env: doctorEnv })
      expect(missing.code).toBe(1)
      expect(missing.stdout.split("\n")).toContain(
        `✘ agent: no agent nobody: ${box.path("agents/nobody")} is not a directory → check the id, and PLANCKCLAW_AGENTS_DIR (serve's agents)`
      )
      const bad = yield* Cli.run(["doctor", "--agent", "../alice"], { cwd: box.dir, env: doctorEnv })
      expect(bad.code).toBe(1)
      expect(bad.stdout.split("\n")).toContainEqual(
        expect.stringMatching(/^✘ agent: agent id "\.\.\/alice" is not allowed.* → give the name of its directory under PLANCKCLAW_AGENTS_DIR$/)
      )
    }), 60_000)
})
