/**
 * mcp.json as other MCP clients write it: read with Schema, each bad entry
 * refused with the file and the reason, and the claws unharmed by a bad file.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ClawsWithMcp from "../../../src/claws/mcp/ClawsWithMcp.js"
import * as McpConfig from "../../../src/claws/mcp/McpConfig.js"
import * as McpNames from "../../../src/claws/mcp/McpNames.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as Sandbox from "../../support/Sandbox.js"

const file = "/home/me/.planckclaw/mcp.json"

describe("mcp.json", () => {
  it("reads Claude Desktop's format: stdio servers with args and env, HTTP servers with headers", () => {
    const read = McpConfig.parse(file, JSON.stringify({
      mcpServers: {
        filesystem: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], env: { A: "1" } },
        remote: { type: "http", url: "https://example.test/mcp", headers: { Authorization: "Bearer abc" } },
        notes: { command: "notes-server", cwd: "data" },
        off: { command: "x", disabled: true }
      }
    }))
    expect(read.problems).toEqual([])
    expect(read.servers).toEqual([
      { _tag: "Stdio", name: "filesystem", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], env: { A: "1" }, cwd: "/home/me/.planckclaw" },
      { _tag: "Http", name: "remote", url: "https://example.test/mcp", headers: { Authorization: "Bearer abc" } },
      { _tag: "Stdio", name: "notes", command: "notes-server", args: [], env: {}, cwd: "/home/me/.planckclaw/data" }
    ])
  })

  it("refuses a bad entry with the file and the reason, and keeps the good ones", () => {
    const read = McpConfig.parse(file, JSON.stringify({
      mcpServers: {
        good: { command: "ok" },
        "two__parts": { command: "ok" },
        noCommand: { args: ["x"] },
        badArgs: { command: "x", args: "not a list" },
        both: { command: "x", url: "http://x" },
        ftp: { url: "ftp://x" },
        legacy: { type: "sse", url: "https://example.test/sse" },
        streamable: { type: "http", url: "https://example.test/mcp" }
      }
    }))
    expect(read.servers.map((server) => server.name)).toEqual(["good", "streamable"])
    const reasons = Object.fromEntries(read.problems.map((problem) => [problem.source, problem.reason]))
    expect(reasons[`${file}: server "two__parts"`]).toMatch(/without __/)
    expect(reasons[`${file}: server "noCommand"`]).toMatch(/needs "command".*or "url"/)
    expect(reasons[`${file}: server "badArgs"`]).toMatch(/args/)
    expect(reasons[`${file}: server "both"`]).toMatch(/not both/)
    expect(reasons[`${file}: server "ftp"`]).toMatch(/http:\/\/ or https:\/\//)
    expect(reasons[`${file}: server "legacy"`]).toBe(
      '"type": "sse" (the older HTTP+SSE transport) is not spoken here: give the server\'s Streamable HTTP endpoint ' +
        '(often /mcp) as "url", without "type" or with "type": "http"'
    )
  })

  it("refuses a header fetch could never send, saying which and why without its value (a pasted token's curly quote or zero-width space)", () => {
    const read = McpConfig.parse(file, JSON.stringify({
      mcpServers: {
        quoted: { url: "https://example.test/mcp", headers: { Authorization: "Bearer \u201csk-Quoted-Token\u201d" } },
        invisible: { url: "https://example.test/mcp", headers: { "X-Api-Key": "sk-Pasted\u200bToken" } },
        broken: { url: "https://example.test/mcp", headers: { "X-Api-Key": "sk-one\nX-Other: two" } },
        spaced: { url: "https://example.test/mcp", headers: { "Api Key": "abc" } },
        latin: { url: "https://example.test/mcp", headers: { "X-Team": "caf\u00e9\tops" } }
      }
    }))
    expect(read.servers.map((server) => server.name)).toEqual(["latin"])
    expect(read.problems.map((problem) => problem.reason)).toEqual([
      'header "Authorization": character 8 of its value is outside Latin-1, which an HTTP header cannot carry',
      'header "X-Api-Key": character 10 of its value is outside Latin-1, which an HTTP header cannot carry',
      'header "X-Api-Key": character 7 of its value is a line break, which an HTTP header cannot carry',
      "header \"Api Key\": not a header name (letters, digits and !#$%&'*+-.^_`|~)"
    ])
    expect(JSON.stringify(read.problems)).not.toMatch(/Quoted-Token|Pasted|sk-one/)
  })

  it("refuses a server name ending in _, whose tools' names would read as another server's; every name kept reads back whole", () => {
    const read = McpConfig.parse(file, JSON.stringify({
      mcpServers: { files_: { command: "ok" }, files: { command: "ok" }, _lead: { command: "ok" }, "a_b-c": { command: "ok" }, _: { command: "ok" } }
    }))
    expect(read.servers.map((server) => server.name)).toEqual(["files", "_lead", "a_b-c"])
    expect(read.problems).toEqual([
      { source: `${file}: server "files_"`, reason: expect.stringContaining("not ending in _") },
      { source: `${file}: server "_"`, reason: expect.stringContaining("not ending in _") }
    ])
    for (const server of read.servers) {
      for (const tool of ["echo", "_echo", "read_text_file"]) {
        expect(McpNames.parseToolName(McpNames.toolName(server.name, tool))).toEqual({ server: server.name, tool })
      }
    }
  })

  it("shows an HTTP server's URL without its user, password, query or fragment, and hides them in its errors' words", () => {
    const entry = { _tag: "Http", name: "remote", url: "https://bob:S3cretPass@mcp.example.test/v1?api_key=K3yValue#frag", headers: {} } as const
    expect(McpNames.describeServer(entry)).toBe("https://mcp.example.test/v1?…")
    const hidden = McpNames.hidingSecrets(entry)
    const said = hidden(`Transport error (POST ${entry.url}); as REDACTED:REDACTED@mcp.example.test; password S3cretPass`)
    expect(said).toBe("Transport error (POST https://…@mcp.example.test/v1?…#…); as REDACTED:REDACTED@mcp.example.test; password …")
    const plain = { _tag: "Http", name: "plain", url: "https://mcp.example.test/v1", headers: {} } as const
    expect([McpNames.describeServer(plain), McpNames.hidingSecrets(plain)("as is")]).toEqual(["https://mcp.example.test/v1", "as is"])
  })

  it("hides the values an entry's env or headers give (a key, a token after its scheme) in its errors' words, but not short ones", () => {
    const stdio = {
      _tag: "Stdio",
      name: "github",
      command: "github-mcp-server",
      args: [],
      env: { GITHUB_TOKEN: "ghp_TestToken123", DEBUG: "1", KEYS: "sk-Short-1 sk-Short-1-and-longer" },
      cwd: "/"
    } as const
    expect(McpNames.hidingSecrets(stdio)("Bad credentials: ghp_TestToken123 (DEBUG=1)")).toBe("Bad credentials: … (DEBUG=1)")
    // The longer value hidden whole, not left half shown around a shorter one inside it.
    expect(McpNames.hidingSecrets(stdio)("keys: sk-Short-1 sk-Short-1-and-longer")).toBe("keys: …")
    const http = {
      _tag: "Http",
      name: "docs",
      url: "https://mcp.example.test/mcp",
      headers: { Authorization: "Bearer TestBearer456", "X-Api-Key": " TestApiKey789 ", "X-Team": "ops" }
    } as const
    expect(McpNames.hidingSecrets(http)("MCP HTTP status 401: token TestBearer456 refused; key TestApiKey789; team ops"))
      .toBe("MCP HTTP status 401: token … refused; key …; team ops")
  })

  it("refuses a file that is no JSON, or not in the mcpServers format, naming the file", () => {
    expect(McpConfig.parse(file, "{ nope").problems).toEqual([{ source: file, reason: expect.stringMatching(/^not JSON: /) }])
    expect(McpConfig.parse(file, "{\"servers\": {}}").problems[0]?.reason).toMatch(/no "mcpServers" object/)
    expect(McpConfig.parse(file, "[]").problems[0]?.reason).toMatch(/must be a JSON object/)
  })

  it.effect("a missing file means no servers and no problem", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-config-")
      expect(McpConfig.read(Path.join(dir, "mcp.json"))).toEqual({ file: Path.join(dir, "mcp.json"), servers: [], problems: [] })
      Fs.writeFileSync(Path.join(dir, "mcp.json"), "not json")
      expect(McpConfig.read(Path.join(dir, "mcp.json")).problems).toHaveLength(1)
    }))

  it.effect("with a bad mcp.json the claws still work, and a claw may not take an MCP tool's name", () =>
    Effect.gen(function*() {
      const scripts = InMemoryClaws.make([
        { definition: { name: "dice", description: "roll", input_schema: { type: "object", properties: {} } }, run: () => Effect.succeed({ content: "4", isError: false }) },
        { definition: { name: "mcp__fake__tool", description: "", input_schema: { type: "object", properties: {} } }, run: () => Effect.succeed({ content: "no", isError: false }) }
      ])
      const broken = McpConfig.parse(file, "{ nope")
      const mcp = { list: Effect.succeed({ tools: [], problems: broken.problems }), call: () => Effect.die("no MCP tool exists") }
      const claws = ClawsWithMcp.withMcp(scripts, mcp)
      const catalog = yield* claws.list
      expect(catalog.tools.map((tool) => tool.name)).toEqual(["dice"])
      expect(catalog.problems.map((problem) => problem.source)).toEqual(["claws", file])
      expect(catalog.problems[0]?.reason).toMatch(/names starting mcp__ are the MCP servers'/)
      expect(yield* claws.call("dice", {})).toEqual({ content: "4", isError: false })
      // The same catalogues give the same object (the agent's warm path).
      expect(yield* claws.list).toBe(catalog)
    }))
})
