/**
 * `planckclaw tools` and `planckclaw doctor` with an mcp.json (the built
 * command): each server started and what it offers, or why it failed; a
 * refused entry with its file and the reason.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cli from "../support/Cli.js"
import * as McpServers from "../support/McpServers.js"
import { sandbox } from "../support/Sandbox.js"

const home = Effect.gen(function*() {
  const box = yield* sandbox({}, "planckclaw-mcp-tools-")
  fs.writeFileSync(box.path("mcp.json"), JSON.stringify({
    mcpServers: {
      everything: McpServers.everything(),
      missing: { command: box.path("no-such-server") },
      crashy: { command: "/bin/sh", args: ["-c", "echo cannot open the database >&2; exit 3"] },
      leaky: { ...McpServers.everything({ ANTHROPIC_API_KEY: "copied-by-mistake" }) },
      bad: { url: "ftp://example.test" },
      // Nothing listens on port 9; the URL's password and query token must show nowhere.
      locked: { url: "http://mcp-user:UrlPassSecret@127.0.0.1:9/mcp?token=QueryTokenSecret" }
    }
  }))
  return { box, env: { ...box.env, PLANCKCLAW_HOME: box.dir } }
})

describe("MCP servers in tools and doctor", () => {
  it.live("tools lists each server's tools under their model names, and why a server offers none", () =>
    Effect.gen(function*() {
      const { box, env } = yield* home
      const result = yield* Cli.run(["tools"], { cwd: box.dir, env })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(`Tools of MCP server everything (${process.execPath} ${McpServers.everythingEntry} stdio):\n`)
      expect(result.stdout).toContain("  mcp__everything__echo  Echoes back the input string\n")
      expect(result.stdout).toMatch(/MCP server missing \(.*no-such-server\) is not running: Cannot spawn MCP server: NotFound/)
      expect(result.stdout).toContain("MCP server crashy (/bin/sh -c echo cannot open the database >&2; exit 3) is not running:")
      expect(result.stdout).toContain("is not running: exited with code 3; its stderr ends: cannot open the database")
      expect(result.stdout).toContain(`${box.path("mcp.json")}: server "bad": must be an http:// or https:// URL`)
      expect(result.stdout).toContain("MCP server locked (http://127.0.0.1:9/mcp?…) is not running")
      expect(result.stdout + result.stderr).not.toMatch(/UrlPassSecret|QueryTokenSecret/)
      expect(result.stderr).toBe("")
    }), 60_000)

  it.live("doctor starts each server and says what it offers or why it failed", () =>
    Effect.gen(function*() {
      const { box, env } = yield* home
      const result = yield* Cli.run(["doctor"], { cwd: box.dir, env: { ...env, ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: "http://127.0.0.1:9" } })
      const lines = result.stdout.split("\n")
      expect(lines).toContainEqual(expect.stringMatching(/^✔ mcp server everything: 12 tools: echo, .*get-env/))
      expect(lines).toContainEqual(expect.stringMatching(/^✘ mcp server missing: .*no-such-server: Cannot spawn MCP server.* → check its command or URL by hand$/))
      expect(lines).toContainEqual(expect.stringMatching(/^✘ mcp server crashy: .*: exited with code 3; its stderr ends: cannot open the database/))
      expect(lines).toContainEqual(expect.stringMatching(/^✘ mcp.json: .*server "bad": must be an http:\/\/ or https:\/\/ URL/))
      expect(lines).toContainEqual(expect.stringMatching(/^✔ mcp server leaky: 12 tools/))
      expect(lines).toContainEqual(
        "✘ mcp server leaky: its env names ANTHROPIC_API_KEY, which hold the agent's secrets: not passed → remove them from its entry"
      )
      expect(lines).toContainEqual(expect.stringMatching(/^✘ mcp server locked: http:\/\/127\.0\.0\.1:9\/mcp\?…: /))
      expect(result.stdout + result.stderr).not.toMatch(/UrlPassSecret|QueryTokenSecret/)
      expect(result.stderr).not.toContain("is down")
    }), 60_000)
})
