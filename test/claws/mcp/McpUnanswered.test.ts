/**
 * An MCP server that stays up but leaves a call unanswered for the timeout
 * is taken for hung: stopped (its process killed; over HTTP, its connection
 * dropped) and started again at once for the next call, said once in the
 * log, a call of another turn still waiting on it answered that it was
 * restarted. A tool's own error result is an answer, and restarts nothing.
 * Real servers (scripted on the official SDK, and server-everything over
 * HTTP); the timeout moved on the TestClock.
 */
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as McpClaws from "../../../src/claws/mcp/McpClaws.js"
import * as McpConfig from "../../../src/claws/mcp/McpConfig.js"
import { captureLogs } from "../../support/LogCapture.js"
import { advanceTo, awaitPendingSleep, yieldToEventLoop } from "../../support/TestClockWait.js"
import * as McpServers from "../../support/McpServers.js"
import * as Sandbox from "../../support/Sandbox.js"

const timeout = Duration.seconds(30)

const start = (entries: Record<string, unknown>) =>
  McpClaws.makeOnPlatform(
    McpConfig.parse(Path.join("/tmp", "mcp.json"), JSON.stringify({ mcpServers: entries })),
    { timeout, outputMax: 16_384, withheldSecrets: [] }
  )

/** Lets real I/O run until `check` holds (under the TestClock too); the bound only turns a hang into a failure. */
const until = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    while (!check()) yield* yieldToEventLoop
  }).pipe(Sandbox.within(what), Sandbox.onLiveClock)

const stuckTools = [{ name: "stuck", inputSchema: { type: "object" } }, { name: "echo", inputSchema: { type: "object" } }]

describe("MCP servers that leave a call unanswered", () => {
  it.effect("a stdio server that hangs under a call is killed and started again at once, a call of another turn answered that it was", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-hung-")
      const logs = yield* captureLogs
      const mcp = yield* start({
        hung: McpServers.scripted(dir, { tools: stuckTools, answers: { stuck: { hang: true }, echo: { text: "echoed" } } })
      })
      const connection = mcp.connections.get("hung")!
      expect(yield* mcp.call("mcp__hung__echo", {}).pipe(Effect.provide(logs.layer))).toEqual({ content: "echoed", isError: false })
      const first = connection.pid()!
      // Past the deadlines of the start, so the calls' own are the ones moved to.
      yield* TestClock.adjust("1 second")
      const hanging = yield* Effect.forkChild(mcp.call("mcp__hung__stuck", {}))
      yield* awaitPendingSleep(1000 + Duration.toMillis(timeout))
      // Another turn's call, 10 s later, waits on the same hung server.
      yield* TestClock.adjust("10 seconds")
      const waiting = yield* Effect.forkChild(mcp.call("mcp__hung__stuck", {}))
      yield* awaitPendingSleep(11_000 + Duration.toMillis(timeout))
      yield* advanceTo(1000 + Duration.toMillis(timeout))
      expect(yield* Fiber.join(hanging)).toEqual({
        content: "Tool stuck timed out after 30s; MCP server hung did not answer, so it is being restarted",
        isError: true
      })
      // Answered now, not left to its own deadline 10 s on (no clock moved).
      expect(yield* Fiber.join(waiting).pipe(Sandbox.within("the waiting call to be answered"), Sandbox.onLiveClock)).toEqual({
        content: "Tool stuck: MCP server hung is not running (it left a call of stuck unanswered for 30s, so it was stopped); " +
          "it is being restarted, try again shortly",
        isError: true
      })
      yield* Sandbox.gone("the hung server", first).pipe(Sandbox.onLiveClock)
      // Started again without a backoff: the next call finds it up.
      yield* until("the server to be started again", () => connection.state()._tag === "Up" && connection.pid() !== first)
      expect(yield* mcp.call("mcp__hung__echo", {})).toEqual({ content: "echoed", isError: false })
      expect(logs.lines.filter((line) => line.includes("MCP server hung"))).toEqual([
        "WARN MCP server hung is down (it left a call of stuck unanswered for 30s, so it was stopped); starting it again at once"
      ])
    }), 60_000)

  it.live("a tool's own error result is an answer: the server is not restarted", () =>
    Effect.gen(function*() {
      const dir = yield* Sandbox.tempDir("planckclaw-mcp-refusing-")
      const mcp = yield* start({
        refusing: McpServers.scripted(dir, { tools: stuckTools, answers: { stuck: { error: "no such record" } } })
      })
      const connection = mcp.connections.get("refusing")!
      expect(yield* mcp.call("mcp__refusing__stuck", {})).toEqual({ content: "no such record", isError: true })
      const first = connection.pid()
      expect(yield* mcp.call("mcp__refusing__stuck", {})).toEqual({ content: "no such record", isError: true })
      expect(connection.state()._tag).toBe("Up")
      expect(connection.pid()).toBe(first)
    }), 60_000)

  it.effect("an HTTP server that hangs under a call is reached again on a fresh connection, at once", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const port = yield* McpServers.freePort
      yield* McpServers.httpEverything(port)
      const mcp = yield* start({ remote: { url: `http://127.0.0.1:${port}/mcp` } })
      const connection = mcp.connections.get("remote")!
      const echo = mcp.call("mcp__remote__echo", { message: "over http" })
      expect((yield* echo.pipe(Effect.provide(logs.layer))).content).toBe("Echo: over http")
      yield* TestClock.adjust("1 second")
      const slow = yield* Effect.forkChild(
        mcp.call("mcp__remote__trigger-long-running-operation", { duration: 600, steps: 2 })
      )
      yield* advanceTo(1000 + Duration.toMillis(timeout))
      expect(yield* Fiber.join(slow)).toEqual({
        content: "Tool trigger-long-running-operation timed out after 30s; MCP server remote did not answer, so it is being restarted",
        isError: true
      })
      yield* logs.waitFor(/MCP server remote is down/).pipe(Sandbox.within("the restart to be logged"), Sandbox.onLiveClock)
      yield* until("the server to be reached again", () => connection.state()._tag === "Up")
      expect((yield* echo).content).toBe("Echo: over http")
      expect(logs.lines.filter((line) => line.includes("MCP server remote"))).toEqual([
        "WARN MCP server remote is down (it left a call of trigger-long-running-operation unanswered for 30s, so it was stopped); " +
        "starting it again at once"
      ])
    }), 60_000)
})
