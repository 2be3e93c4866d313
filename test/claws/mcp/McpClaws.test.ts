/**
 * MCP servers' tools as claws, against the real reference servers over
 * stdio (from node_modules): a call answered (a hung call: McpUnanswered),
 * a killed server restarted after its backoff (TestClock, no
 * sleeps), the filesystem server kept to its directory, and no secret in
 * a server's environment.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Redacted, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as McpClaws from "../../../src/claws/mcp/McpClaws.js"
import * as McpConfig from "../../../src/claws/mcp/McpConfig.js"
import { captureLogs } from "../../support/LogCapture.js"
import { advanceTo, awaitPendingSleep, yieldToEventLoop } from "../../support/TestClockWait.js"
import * as McpServers from "../../support/McpServers.js"
import * as Sandbox from "../../support/Sandbox.js"

const timeout = Duration.seconds(30)

const serversOf = (entries: Record<string, unknown>, dir = "/tmp") =>
  McpConfig.parse(Path.join(dir, "mcp.json"), JSON.stringify({ mcpServers: entries }))

const start = (entries: Record<string, unknown>, withheldSecrets: Array<Redacted.Redacted<string>> = []) =>
  Effect.gen(function*() {
    return yield* McpClaws.makeOnPlatform(serversOf(entries), { timeout, outputMax: 16_384, withheldSecrets })
  })

/** Lets real I/O run until `check` holds (under the TestClock too); the bound only turns a hang into a failure. */
const until = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    while (!check()) yield* yieldToEventLoop
  }).pipe(Sandbox.within(what), Sandbox.onLiveClock)

describe("MCP servers as claws", () => {
  it.live("offers a server's tools under its prefix, and a model's call of echo gets the echo", () =>
    Effect.gen(function*() {
      const mcp = yield* start({ everything: McpServers.everything() })
      const catalog = yield* mcp.list
      const echo = catalog.tools.find((tool) => tool.name === "mcp__everything__echo")
      expect(echo?.description).toBe("Echoes back the input string")
      expect(echo?.input_schema).toMatchObject({ type: "object", required: ["message"] })
      expect(echo?.input_schema).not.toHaveProperty("$schema")
      expect(catalog.problems).toEqual([])
      expect(yield* mcp.call("mcp__everything__echo", { message: "hello from the model" })).toEqual({
        content: "Echo: hello from the model",
        isError: false
      })
      expect(yield* mcp.call("mcp__everything__no-such-tool", {})).toMatchObject({ isError: true })
      expect(yield* mcp.call("mcp__other__echo", {})).toEqual({ content: "Unknown tool: mcp__other__echo", isError: true })
      expect((yield* mcp.call("mcp__everything__echo", [1])).content).toMatch(/must be a JSON object/)
    }), 60_000)

  it.effect("answers an error while a killed server is down, and starts it again after the backoff", () =>
    Effect.gen(function*() {
      const mcp = yield* start({ everything: McpServers.everything() })
      const connection = mcp.connections.get("everything")!
      expect((yield* mcp.call("mcp__everything__echo", { message: "one" })).content).toBe("Echo: one")
      const first = connection.pid()!
      process.kill(first, "SIGKILL")
      yield* until("the server to be found dead", () => connection.state()._tag === "Down")
      const meanwhile = yield* mcp.call("mcp__everything__echo", { message: "two" })
      expect(meanwhile.isError).toBe(true)
      expect(meanwhile.content).toMatch(/MCP server everything is not running \(was killed by a signal/)
      // Still listed while down, so a turn that offered it gets an error result, not "unknown tool".
      const listed = yield* mcp.list
      expect(listed.tools.map((tool) => tool.name)).toContain("mcp__everything__echo")
      expect(listed.problems[0]?.reason).toMatch(/^not running: was killed by a signal/)
      // Named as the file's own problems are: the file, then the server.
      expect(listed.problems[0]?.source).toBe('/tmp/mcp.json: server "everything"')
      // The first restart waits 1 s of the TestClock (restartSchedule), and not before.
      yield* awaitPendingSleep(1000)
      expect(connection.state()._tag).toBe("Down")
      yield* advanceTo(1000)
      // A restart is not waited for by a call (it answers at once); once up, the tools answer again.
      yield* until("the server to be up again", () => connection.state()._tag === "Up")
      expect((yield* mcp.call("mcp__everything__echo", { message: "three" })).content).toBe("Echo: three")
      expect(connection.pid()).not.toBe(first)
      yield* Sandbox.gone("the killed server", first)
    }), 60_000)

  it.live("a server that dies under a call says why as it exited: its exit code and the end of its stderr", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-crash-")
      const mcp = yield* start({
        crashy: McpServers.scripted(dir, {
          tools: [{ name: "boom", inputSchema: { type: "object" } }],
          answers: { boom: { exit: { stderr: "fatal: out of memory", code: 1 } } }
        })
      })
      expect(yield* mcp.call("mcp__crashy__boom", {})).toEqual({
        content: "Tool boom: MCP server crashy is not running (exited with code 1; its stderr ends: fatal: out of memory); " +
          "it is being restarted, try again shortly",
        isError: true
      })
    }), 60_000)

  it.live("a server that echoes the key its entry gives it, dying, has it hidden from the model and the log", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-echoing-")
      const logs = yield* captureLogs
      const key = "sk-test-EnvSecret123"
      const mcp = yield* start({
        keyed: {
          ...McpServers.scripted(dir, {
            tools: [{ name: "search", inputSchema: { type: "object" } }],
            answers: { search: { exit: { stderr: `fatal: the API refused the key ${key}`, code: 1 } } }
          }),
          env: { SEARCH_API_KEY: key }
        }
      })
      const called = yield* mcp.call("mcp__keyed__search", {}).pipe(Effect.provide(logs.layer))
      expect(called.content).toBe(
        "Tool search: MCP server keyed is not running (exited with code 1; its stderr ends: fatal: the API refused the key …); " +
          "it is being restarted, try again shortly"
      )
      yield* logs.waitFor(/MCP server keyed is down/).pipe(Sandbox.within("the death to be logged"))
      expect(logs.lines.join("\n")).not.toContain("EnvSecret")
    }), 60_000)

  it.effect("a server that dies after a long healthy life is started again at once, the backoff starting over", () =>
    Effect.gen(function*() {
      const mcp = yield* start({ everything: McpServers.everything() })
      const connection = mcp.connections.get("everything")!
      expect((yield* mcp.call("mcp__everything__echo", { message: "one" })).content).toBe("Echo: one")
      const first = connection.pid()!
      yield* TestClock.adjust("2 minutes")
      process.kill(first, "SIGKILL")
      // No clock moved: up again without a backoff.
      yield* until("the server to be started again", () => connection.state()._tag === "Up" && connection.pid() !== first)
      expect((yield* mcp.call("mcp__everything__echo", { message: "two" })).content).toBe("Echo: two")
    }), 60_000)

  it.live("drops what a server prints to its stdout outside the protocol, says so once, and goes on answering", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-chatty-")
      const logs = yield* captureLogs
      const mcp = yield* start({
        chatty: {
          ...McpServers.scripted(dir, {
            banner: "Chatty MCP server running on stdio with the key sk-test-BannerKey1",
            tools: [{ name: "greet", inputSchema: { type: "object" } }],
            answers: { greet: { print: "debug: greet called", text: "hello" } }
          }),
          env: { CHATTY_KEY: "sk-test-BannerKey1" }
        }
      })
      const connection = mcp.connections.get("chatty")!
      const greet = mcp.call("mcp__chatty__greet", {}).pipe(Effect.provide(logs.layer))
      expect(yield* greet).toEqual({ content: "hello", isError: false })
      const first = connection.pid()
      expect(yield* greet).toEqual({ content: "hello", isError: false })
      expect(connection.state()._tag).toBe("Up")
      expect(connection.pid()).toBe(first)
      expect(logs.lines.filter((line) => line.includes("stdout"))).toEqual([
        "WARN MCP server chatty printed a line that is no MCP message to its stdout (ignored, and any more; " +
        "a server's logs belong on stderr): Chatty MCP server running on stdio with the key …"
      ])
    }), 60_000)

  it.live("drops a JSON line on stdout that is no JSON-RPC message (a server logging JSON), says so once, and keeps the server up", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-json-log-")
      const logs = yield* captureLogs
      const mcp = yield* start({
        logger: McpServers.scripted(dir, {
          tools: [{ name: "work", inputSchema: { type: "object" } }],
          answers: { work: { print: `{"level":"info","msg":"working"}`, text: "done" } }
        })
      })
      const connection = mcp.connections.get("logger")!
      const work = mcp.call("mcp__logger__work", {}).pipe(Effect.provide(logs.layer))
      expect(yield* work).toEqual({ content: "done", isError: false })
      const first = connection.pid()
      expect(yield* work).toEqual({ content: "done", isError: false })
      expect(connection.state()._tag).toBe("Up")
      expect(connection.pid()).toBe(first)
      expect(logs.lines.filter((line) => line.includes("stdout"))).toEqual([
        "WARN MCP server logger printed a line that is no MCP message to its stdout (ignored, and any more; " +
        `a server's logs belong on stderr): {"level":"info","msg":"working"}`
      ])
    }), 60_000)

  it.effect("a server whose stdout breaks the protocol under a call is restarted, not left deaf with its process alive", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-deaf-")
      const mcp = yield* start({
        broken: McpServers.scripted(dir, {
          tools: [{ name: "work", inputSchema: { type: "object" } }, { name: "echo", inputSchema: { type: "object" } }],
          // A JSON-RPC error that answers no request: no pending call's answer can be trusted after it.
          answers: { work: { print: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` }, echo: { text: "echoed" } }
        })
      })
      const connection = mcp.connections.get("broken")!
      expect(yield* mcp.call("mcp__broken__echo", {})).toEqual({ content: "echoed", isError: false })
      const first = connection.pid()!
      const broken = yield* mcp.call("mcp__broken__work", {})
      expect(broken.isError).toBe(true)
      expect(broken.content).toMatch(/^Tool work: MCP server broken is not running \(.*uncorrelated JSON-RPC error/)
      yield* until("the server to be found down", () => connection.state()._tag === "Down")
      yield* awaitPendingSleep(1000)
      yield* advanceTo(1000)
      yield* until("the server to be up again", () => connection.state()._tag === "Up")
      expect(yield* mcp.call("mcp__broken__echo", {})).toEqual({ content: "echoed", isError: false })
      expect(connection.pid()).not.toBe(first)
      yield* Sandbox.gone("the deaf server", first)
    }), 60_000)

  it.live("a reply over the MCP message limit says what was too large and what the limit is", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-huge-")
      const mcp = yield* start({
        huge: McpServers.scripted(dir, {
          tools: [{ name: "dump", inputSchema: { type: "object" } }],
          answers: { dump: { bytes: 17 * 1024 * 1024 } }
        })
      })
      expect(yield* mcp.call("mcp__huge__dump", {})).toEqual({
        content: "Tool dump: MCP server huge is not running (the server sent a message over 16 MiB, the most one MCP message " +
          "may hold: a tool's result or tool list that large is refused); it is being restarted, try again shortly",
        isError: true
      })
    }), 60_000)

  it.live("refuses a call whose input would make a message over the MCP limit before sending it, and keeps the server up", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-huge-input-")
      const mcp = yield* start({
        notes: McpServers.scripted(dir, { tools: [{ name: "save", inputSchema: { type: "object" } }], answers: { save: { text: "saved" } } })
      })
      const connection = mcp.connections.get("notes")!
      expect(yield* mcp.call("mcp__notes__save", { text: "small" })).toEqual({ content: "saved", isError: false })
      const first = connection.pid()
      const refused = yield* mcp.call("mcp__notes__save", { text: "x".repeat(16 * 1024 * 1024) })
      expect(refused.isError).toBe(true)
      expect(refused.content).toMatch(
        /^Tool save: its input is too large: \d+ bytes as an MCP request, over the 16 MiB \(16777216 bytes\) one MCP message may hold; it was not sent$/
      )
      expect(connection.state()._tag).toBe("Up")
      expect(yield* mcp.call("mcp__notes__save", { text: "small again" })).toEqual({ content: "saved", isError: false })
      expect(connection.pid()).toBe(first)
    }), 60_000)

  it.live("offers a tool its server lists twice once, and says so (a model's API refuses tools of one name)", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-twice-")
      const mcp = yield* start({
        twice: McpServers.scripted(dir, {
          tools: [
            { name: "look", inputSchema: { type: "object", properties: { where: { type: "string" } } } },
            { name: "look", inputSchema: { type: "object" } }
          ],
          answers: { look: { text: "seen" } }
        })
      })
      const listed = yield* mcp.list
      expect(listed.tools.map((tool) => tool.name)).toEqual(["mcp__twice__look"])
      expect(listed.tools[0]?.input_schema).toMatchObject({ properties: { where: { type: "string" } } })
      expect(listed.problems).toEqual([{
        source: '/tmp/mcp.json: server "twice"',
        reason: 'tool "look" is listed twice by the server; the first is offered'
      }])
      expect(yield* mcp.call("mcp__twice__look", { where: "here" })).toEqual({ content: "seen", isError: false })
    }), 60_000)

  it.effect("a server that hangs at its start holds the first message for the timeout only, not every one after", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const mcp = yield* start({ stuck: { command: "/bin/sh", args: ["-c", "exec sleep 600"] } }).pipe(Scope.provide(scope))
      const first = yield* Effect.forkChild(mcp.list)
      yield* advanceTo(Duration.toMillis(timeout))
      const listed = yield* Fiber.join(first)
      expect(listed.tools).toEqual([])
      expect(listed.problems[0]?.reason).toBe("not running: still starting after 30s")
      // Down, or started again and hanging again: either way the next lists and calls answer at once (no clock moved).
      const again = yield* mcp.list
      expect(again.problems[0]?.reason).toMatch(/^not running: (still starting|.*timed out)/)
      const call = yield* mcp.call("mcp__stuck__anything", {})
      expect(call.isError).toBe(true)
      expect(call.content).toMatch(/MCP server stuck is not running/)
      // McpClient's stop waits 5 s (this clock) for a server that ignores its closed stdin, then SIGTERM.
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(closing)
    }), 60_000)

  it.live("reaches a server over HTTP (url and headers), and answers an error while it is gone", () =>
    Effect.gen(function*() {
      const port = yield* McpServers.freePort
      const server = yield* McpServers.httpEverything(port)
      const mcp = yield* start({ remote: { url: `http://127.0.0.1:${port}/mcp`, headers: { "X-Test": "1" } } })
      expect((yield* mcp.call("mcp__remote__echo", { message: "over http" })).content).toBe("Echo: over http")
      server.kill("SIGKILL")
      yield* Sandbox.exited("the HTTP server", server.pid!)
      const gone = yield* mcp.call("mcp__remote__echo", { message: "anyone?" })
      expect(gone.isError).toBe(true)
      expect(gone.content).toMatch(/MCP server remote is not running/)
    }), 60_000)

  it.live("keeps server-filesystem to the directory it was given", () =>
    Effect.gen(function*() {
      const dir = Fs.realpathSync(yield* Sandbox.tempDir("planckclaw-mcp-fs-"))
      Fs.writeFileSync(Path.join(dir, "note.txt"), "inside the sandbox")
      const mcp = yield* start({ files: McpServers.filesystem(dir) })
      const names = (yield* mcp.list).tools.map((tool) => tool.name)
      expect(names).toContain("mcp__files__read_text_file")
      const inside = yield* mcp.call("mcp__files__read_text_file", { path: Path.join(dir, "note.txt") })
      expect(inside).toEqual({ content: "inside the sandbox", isError: false })
      const outside = yield* mcp.call("mcp__files__read_text_file", { path: "/etc/hostname" })
      expect(outside.isError).toBe(true)
      expect(outside.content).toMatch(/Access denied|outside allowed directories/i)
    }), 60_000)

  it.live("says why a server cannot start naming its program, never its arguments (a key may be one), in the log, the listing and the model's result", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const mcp = yield* start({ missing: { command: "no-such-mcp-server", args: ["--api-key", "sk-test-ArgSecret"] } })
      const listed = yield* mcp.list.pipe(Effect.provide(logs.layer))
      expect(listed.problems[0]?.reason).toBe("not running: Cannot spawn MCP server: NotFound: ChildProcess.spawn (no-such-mcp-server)")
      const called = yield* mcp.call("mcp__missing__search", {})
      expect(called.content).toBe(
        "Tool search: MCP server missing is not running (Cannot spawn MCP server: NotFound: ChildProcess.spawn (no-such-mcp-server)); " +
          "it is being restarted, try again shortly"
      )
      yield* logs.waitFor(/MCP server missing is down/).pipe(Sandbox.within("the failed start to be logged"))
      expect(logs.lines.join("\n")).toContain("ChildProcess.spawn (no-such-mcp-server)")
      expect(logs.lines.join("\n")).not.toContain("ArgSecret")
    }), 60_000)

  it.live("gives a server only its entry's variables and the basics, never a secret", () =>
    Effect.gen(function*() {
      const secret = `test-key-${Math.random().toString(36).slice(2)}`
      const saved = process.env.ANTHROPIC_API_KEY
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.env.ANTHROPIC_API_KEY = secret
          process.env.PLANCKCLAW_UNRELATED_VARIABLE = "not for servers"
        }),
        () =>
          Effect.sync(() => {
            if (saved === undefined) delete process.env.ANTHROPIC_API_KEY
            else process.env.ANTHROPIC_API_KEY = saved
            delete process.env.PLANCKCLAW_UNRELATED_VARIABLE
          })
      )
      const discordToken = `discord-${Math.random().toString(36).slice(2)}-token`
      const mcp = yield* start(
        {
          everything: McpServers.everything({
            GREETING: "named in mcp.json",
            ANTHROPIC_API_KEY: "copied by mistake",
            SNEAKY: `Bearer ${discordToken}`
          })
        },
        [Redacted.make(discordToken)]
      )
      const env = JSON.parse((yield* mcp.call("mcp__everything__get-env", {})).content) as Record<string, string>
      expect(env.GREETING).toBe("named in mcp.json")
      expect(env.PATH).toBe(process.env.PATH)
      expect(env).not.toHaveProperty("ANTHROPIC_API_KEY")
      expect(env).not.toHaveProperty("SNEAKY")
      expect(env).not.toHaveProperty("PLANCKCLAW_UNRELATED_VARIABLE")
      expect(JSON.stringify(env)).not.toContain(secret)
      expect(JSON.stringify(env)).not.toContain(discordToken)
    }), 60_000)
})
