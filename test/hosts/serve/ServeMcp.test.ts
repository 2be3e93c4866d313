/**
 * `planckclaw serve`'s POST /v1/mcp (the built command), driven by the
 * official SDK's Streamable HTTP client: behind the token, the claws listed
 * and called, an agent asked by its id (its reply from a loopback
 * Anthropic server, remembered in its own history).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ONLY_CONTROLS } from "../../../src/agent/Agent.js"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import { line } from "../../support/Harness.js"
import * as McpServers from "../../support/McpServers.js"
import { eventually, processesMentioning, sandbox } from "../../support/Sandbox.js"

const token = `token-${Math.random().toString(36).slice(2)}`

const connect = (base: string, bearer: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${bearer}` } }
      })
      const client = new Client({ name: "planckclaw-test", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

describe("planckclaw serve: POST /v1/mcp", () => {
  it.live("behind the token: lists the claws and ask_agent, calls a claw, asks an agent by its id", () =>
    Effect.gen(function*() {
      const brain = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Hello from alice.")))
      const box = yield* sandbox({
        ANTHROPIC_API_KEY: "test-key-not-secret",
        ANTHROPIC_BASE_URL: brain.url,
        PLANCKCLAW_HTTP_TOKEN: token
      }, "planckclaw-serve-mcp-")
      box.claw("hello.sh", `#TOOLS:{"name":"hello","description":"say hello"}\necho hello from the claw\n`)
      const agents = box.path("agents")
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], { cwd: box.dir, env: box.envWith({ PLANCKCLAW_AGENTS_DIR: agents }) })
      const port = yield* eventually("serve to say where it listens", () =>
        /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(running.stderrSoFar))?.[1])
      const base = `http://127.0.0.1:${port}`

      const refused = yield* Effect.promise(() =>
        fetch(`${base}/v1/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }))
      expect(refused.status).toBe(401)

      const client = yield* connect(base, token)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name).sort()).toEqual(["ask_agent", "hello"])
      const hello = yield* Effect.promise(() => client.callTool({ name: "hello", arguments: {} }))
      expect(hello).toMatchObject({ isError: false, content: [{ type: "text", text: "hello from the claw" }] })

      const asked = yield* Effect.promise(() => client.callTool({ name: "ask_agent", arguments: { agent: "alice", message: "hi alice" } }))
      expect(asked).toMatchObject({ isError: false, content: [{ type: "text", text: "Hello from alice." }] })
      expect(fs.readFileSync(path.join(agents, "alice", "history.jsonl"), "utf8")).toBe(
        line("user", "hi alice") + line("assistant", "Hello from alice.")
      )
      const badId = yield* Effect.promise(() => client.callTool({ name: "ask_agent", arguments: { agent: "../etc", message: "hi" } }))
      expect(badId.isError).toBe(true)
      running.process.kill("SIGTERM")
    }), 60_000)

  it.live("starts with a claw whose input schema MCP refuses, offering the others; ask_agent answers a refusal as an error", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", PLANCKCLAW_HTTP_TOKEN: token }, "planckclaw-serve-mcp-bad-schema-")
      box.claw("hello.sh", `#TOOLS:{"name":"hello","description":"say hello"}\necho hello\n`)
      // `properties` holding a string where a schema goes: MCP's Tool would refuse it (its route is built at start).
      box.claw("weather.sh", `#TOOLS:{"name":"weather","input_schema":{"type":"object","properties":{"city":"string"}}}\necho sunny\n`)
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], { cwd: box.dir, env: box.envWith({ PLANCKCLAW_AGENTS_DIR: box.path("agents") }) })
      const port = yield* eventually("serve to say where it listens", () =>
        /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(running.stderrSoFar))?.[1])
      const client = yield* connect(`http://127.0.0.1:${port}`, token)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name).sort()).toEqual(["ask_agent", "hello"])
      expect(Effect.runSync(running.stderrSoFar)).toContain(
        `weather.sh:3: invalid tool definition: a property's schema must be a JSON object or a boolean (at input_schema.properties.city)`
      )
      const ask = (args: Record<string, unknown>) =>
        Effect.map(Effect.promise(() => client.callTool({ name: "ask_agent", arguments: args })), (result) => ({
          isError: result.isError,
          text: (result.content as Array<{ text: string }>)[0]!.text
        }))
      expect(yield* ask({ agent: "alice", message: "\u0001\u0002" })).toEqual({ isError: true, text: ONLY_CONTROLS })
      expect(yield* ask({ agent: "alice", message: "hi", channel: "a\nb" })).toEqual({
        isError: true,
        text: "ask_agent: channel must be 1 to 256 characters without control characters"
      })
      running.process.kill("SIGTERM")
    }), 60_000)

  it.live("listens without starting the home's MCP servers, and offers over MCP the claws, not those servers' tools", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", PLANCKCLAW_HTTP_TOKEN: token }, "planckclaw-serve-mcp-servers-")
      box.claw("hello.sh", `#TOOLS:{"name":"hello","description":"say hello"}\necho hello\n`)
      const marker = `stuck-mcp-${Math.random().toString(36).slice(2)}`
      // A server that would hang at its start: listing its tools waits PLANCKCLAW_CLAW_TIMEOUT for it.
      fs.writeFileSync(box.path("mcp.json"), JSON.stringify({
        mcpServers: { everything: McpServers.everything(), stuck: { command: "/bin/sh", args: ["-c", "exec sleep 600", marker] } }
      }))
      const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], {
        cwd: box.dir,
        env: box.envWith({ PLANCKCLAW_AGENTS_DIR: box.path("agents"), PLANCKCLAW_HOME: box.dir, PLANCKCLAW_CLAW_TIMEOUT: "600" })
      })
      const port = yield* eventually("serve to say where it listens", () =>
        /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(running.stderrSoFar))?.[1])
      const client = yield* connect(`http://127.0.0.1:${port}`, token)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name).sort()).toEqual(["ask_agent", "hello"])
      // Started on an agent's first use, not by serve's start nor by its MCP route.
      expect(processesMentioning(marker)).toEqual([])
      running.process.kill("SIGTERM")
    }), 60_000)
})
