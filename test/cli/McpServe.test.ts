/**
 * `planckclaw mcp` (the built command) driven by the official MCP SDK's
 * client over stdio, as Claude Desktop or Cursor would start it: the tools
 * listed (the claws with their #TOOLS: schemas, and ask_agent), a claw
 * called, the agent asked (its reply from a loopback Anthropic server,
 * remembered in its history).
 */
import * as fs from "node:fs"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ONLY_CONTROLS } from "../../src/agent/Agent.js"
import { APOLOGY } from "../../src/agent/Turn.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { line } from "../support/Harness.js"
import * as Sandbox from "../support/Sandbox.js"
import { sandbox } from "../support/Sandbox.js"

const connect = (env: NodeJS.ProcessEnv, cwd: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [Cli.BIN, "mcp"],
        env: Object.fromEntries(Object.entries(env).flatMap(([key, value]) => value === undefined ? [] : [[key, value]])),
        cwd,
        stderr: "pipe"
      })
      let stderr = ""
      transport.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString("utf8")))
      const client = new Client({ name: "planckclaw-test", version: "1.0.0" })
      await client.connect(transport)
      return { client, transport, stderr: () => stderr }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

describe("planckclaw mcp (stdio MCP server)", () => {
  it.live("lists the claws and ask_agent, calls a claw, and asks the agent", () =>
    Effect.gen(function*() {
      const brain = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Hello over MCP.")))
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: brain.url }, "planckclaw-mcp-serve-")
      box.claw("dice.sh", [
        `#TOOLS:{"name":"roll","description":"roll a die","input_schema":{"type":"object","properties":{"sides":{"type":"integer"}},"required":["sides"]}}`,
        `echo "rolled a d$(printf '%s' "$2" | sed 's/.*"sides":\\([0-9]*\\).*/\\1/')"`
      ].join("\n") + "\n")
      const { client, stderr } = yield* connect({ ...box.env, PLANCKCLAW_HOME: box.dir }, box.dir)

      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name).sort()).toEqual(["ask_agent", "roll"])
      const roll = tools.find((tool) => tool.name === "roll")!
      expect(roll.description).toBe("roll a die")
      expect(roll.inputSchema).toEqual({ type: "object", properties: { sides: { type: "integer" } }, required: ["sides"] })

      const rolled = yield* Effect.promise(() => client.callTool({ name: "roll", arguments: { sides: 20 } }))
      expect(rolled).toMatchObject({ isError: false, content: [{ type: "text", text: "rolled a d20" }] })

      const asked = yield* Effect.promise(() => client.callTool({ name: "ask_agent", arguments: { message: "hello agent" } }))
      expect(asked).toMatchObject({ isError: false, content: [{ type: "text", text: "Hello over MCP." }] })
      const [request] = yield* brain.awaitRequests(1)
      expect(request!.body.messages).toEqual([{ role: "user", content: "hello agent" }])
      // The agent has the claws too.
      expect((request!.body.tools ?? []).map((tool) => tool.name)).toEqual(["roll"])
      expect(box.memoryFile("history.jsonl")).toBe(line("user", "hello agent") + line("assistant", "Hello over MCP."))

      const blank = yield* Effect.promise(() => client.callTool({ name: "ask_agent", arguments: { message: "  " } }))
      expect(blank).toMatchObject({ isError: true })
      expect(stderr()).not.toContain("test-key-not-secret")
    }), 60_000)

  it.live("ask_agent says why while a run holds the memory, and the claws still answer", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: "http://127.0.0.1:9" }, "planckclaw-mcp-held-")
      box.claw("hello.sh", `#TOOLS:{"name":"hello","description":"say hello"}\necho hello\n`)
      const env = { ...box.env, PLANCKCLAW_HOME: box.dir }
      // A run holding the memory: the terminal bridge on an input that never ends.
      const running = yield* Cli.start(["run"], { cwd: box.dir, env })
      yield* Effect.promise(async () => {
        for (let waited = 0; waited < 200 && !fs.existsSync(box.path("memory/.planckclaw-run.lock")); waited++) {
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      })
      const { client } = yield* connect(env, box.dir)
      const asked = yield* Effect.promise(() => client.callTool({ name: "ask_agent", arguments: { message: "hi" } }))
      expect({ isError: asked.isError, text: (asked.content as Array<{ text: string }>)[0]!.text }).toMatchObject({ isError: true, text: expect.stringMatching(/^ask_agent: the agent cannot answer: another planckclaw \(pid \d+/) })
      const hello = yield* Effect.promise(() => client.callTool({ name: "hello", arguments: {} }))
      expect(hello).toMatchObject({ isError: false, content: [{ type: "text", text: "hello" }] })
      running.process.kill("SIGTERM")
    }), 60_000)

  it.live("skips a claw whose input schema MCP refuses, with a warning naming its file and line; the other claws and ask_agent are offered", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret" }, "planckclaw-mcp-bad-schema-")
      box.claw("hello.sh", `#TOOLS:{"name":"hello","description":"say hello"}\necho hello\n`)
      // `required` a string, not an array: MCP's Tool would refuse it, and so would the model's API.
      box.claw("weather.sh", `#TOOLS:{"name":"weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":"city"}}\necho sunny\n`)
      const { client, stderr } = yield* connect({ ...box.env, PLANCKCLAW_HOME: box.dir }, box.dir)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name).sort()).toEqual(["ask_agent", "hello"])
      const warning = `planckclaw warn: claw problem at ${box.path("claws/weather.sh")}:3: ` +
        `invalid tool definition: "required" must be an array of property names (at input_schema.required)`
      expect(stderr().split("\n").filter((line) => line.includes("claw problem"))).toEqual([warning])
    }), 60_000)

  it.live("ask_agent answers as errors what the agent refuses or cannot answer, and a channel serve refuses, which forges no log line", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({
        ANTHROPIC_API_KEY: "test-key-not-secret",
        ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
        PLANCKCLAW_BRAIN_RETRIES: "0",
        PLANCKCLAW_MAX_MESSAGE_BYTES: "100"
      }, "planckclaw-mcp-ask-refused-")
      const { client, stderr } = yield* connect({ ...box.env, PLANCKCLAW_HOME: box.dir }, box.dir)
      const ask = (args: Record<string, unknown>) =>
        Effect.map(Effect.promise(() => client.callTool({ name: "ask_agent", arguments: args })), (result) => ({
          isError: result.isError,
          text: (result.content as Array<{ text: string }>)[0]!.text
        }))
      expect(yield* ask({ message: "x".repeat(101) })).toEqual({
        isError: true,
        text: "ask_agent: the message is 101 bytes; the limit is 100 (the host's PLANCKCLAW_MAX_MESSAGE_BYTES)"
      })
      expect(yield* ask({ message: "hi", channel: "a\nplanckclaw error: forged line" })).toEqual({
        isError: true,
        text: "ask_agent: channel must be 1 to 256 characters without control characters"
      })
      expect(yield* ask({ message: "\u0001\u0002" })).toEqual({ isError: true, text: ONLY_CONTROLS })
      // No brain answers: the apology, an error too.
      expect(yield* ask({ message: "hello", channel: "desk" })).toEqual({ isError: true, text: APOLOGY })
      expect(stderr().split("\n")).not.toContain("planckclaw error: forged line")
    }), 60_000)

  it.live("stops at once when the client closes its input under a claw's call: the call stopped and its processes killed, not waited for", () =>
    Effect.gen(function*() {
      // A claw timeout far past the wait's bound: the stop must not be the timeout's.
      const box = yield* sandbox({ PLANCKCLAW_CLAW_TIMEOUT: "3600" }, "planckclaw-mcp-gone-")
      box.claw("slow.sh", [
        `#TOOLS:{"name":"slow","description":"takes its time"}`,
        `sleep 3600 & echo $! > "${box.path("child.pid")}"`,
        `echo $$ > "${box.path("claw.pid")}"`,
        "wait"
      ].join("\n") + "\n")
      const running = yield* Cli.start(["mcp"], { cwd: box.dir, env: { ...box.env, PLANCKCLAW_HOME: box.dir } })
      const send = (message: unknown) => running.write(`${JSON.stringify(message)}\n`)
      yield* send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })
      yield* running.lines(1).pipe(Sandbox.within("the initialize answer"))
      yield* send({ jsonrpc: "2.0", method: "notifications/initialized" })
      yield* send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "slow", arguments: {} } })
      const claw = yield* Sandbox.pidIn(box.path("claw.pid"))
      const child = yield* Sandbox.pidIn(box.path("child.pid"))
      yield* running.closeInput
      const result = yield* running.done.pipe(Sandbox.within("planckclaw mcp to exit once its input closed"))
      expect(result.code).toBe(0)
      yield* Sandbox.gone("the claw", claw)
      yield* Sandbox.gone("the claw's child", child)
    }), 60_000)

  it.live("writes only the protocol on stdout, and exits 0 when the client closes its input", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({}, "planckclaw-mcp-eof-")
      const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }
      const result = yield* Cli.run(["mcp"], { cwd: box.dir, env: { ...box.env, PLANCKCLAW_HOME: box.dir }, input: `${JSON.stringify(initialize)}\n` })
      expect(result.code).toBe(0)
      const lines = result.stdout.split("\n").filter((text) => text !== "")
      expect(lines).toHaveLength(1)
      expect(JSON.parse(lines[0]!)).toMatchObject({ id: 1, result: { protocolVersion: "2025-06-18", serverInfo: { name: "planckclaw" } } })
    }), 60_000)
})
