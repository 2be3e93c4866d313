/**
 * What both MCP servers (`planckclaw mcp`, serve's POST /v1/mcp) share:
 * which claws they offer, how ask_agent reads its arguments, and which of
 * the agent's replies it answers as an error (serve's, over HTTP:
 * test/hosts/serve/ServeMcpErrors.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Effect, Fiber, Layer, Result } from "effect"
import type * as McpSchema from "effect/ai/McpSchema"
import * as McpServer from "effect/ai/McpServer"
import * as Agent from "../../../src/agent/Agent.js"
import { ONLY_CONTROLS } from "../../../src/agent/Agent.js"
import { APOLOGY, misconfiguredReply } from "../../../src/agent/Turn.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import { addClawTools, askArguments, registrations } from "../../../src/hosts/mcp/McpHost.js"
import { Inbox } from "../../../src/memory/Inbox.js"
import { BrainError } from "../../../src/ports/Brain.js"
import type { ToolDefinition } from "../../../src/ports/Claws.js"
import { captureLogs } from "../../support/LogCapture.js"
import { tempDir } from "../../support/Sandbox.js"

/** `planckclaw mcp`'s ask_agent, on an agent of `script` over a fresh memory directory. */
const askOn = (script: ReadonlyArray<ScriptedBrain.ScriptStep>) =>
  Effect.gen(function*() {
    const directory = yield* tempDir("planckclaw-mcp-ask-")
    const brain = yield* ScriptedBrain.make(script)
    const context = yield* Layer.build(Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory }, { preserveEmptyStrings: true })))
    ))
    const handlers = new Map<string, (payload: unknown) => Effect.Effect<McpSchema.CallToolResult>>()
    const server = {
      addTool: (options: { readonly tool: { readonly name: string }; readonly handle: (payload: unknown) => Effect.Effect<McpSchema.CallToolResult> }) =>
        Effect.sync(() => void handlers.set(options.tool.name, options.handle))
    }
    yield* Layer.build(registrations(InMemoryClaws.make([]), Effect.succeed(Context.pick(Agent.Agent, Inbox)(context)), 1000).pipe(
      Layer.provide(Layer.succeed(McpServer.McpServer, server as unknown as McpServer.McpServer["Service"]))
    ))
    const ask = handlers.get("ask_agent")
    expect(ask).toBeDefined()
    return (message: string) =>
      Effect.map(ask!({ message }), (result) => ({ isError: result.isError, text: (result.content[0] as { readonly text: string }).text }))
  })

const tool = (definition: ToolDefinition): InMemoryClaws.InMemoryTool => ({
  definition,
  run: () => Effect.succeed({ content: definition.name, isError: false })
})

describe("the MCP servers' claws and ask_agent", () => {
  it.effect("a claw MCP's Tool refuses (an embedder's, never checked by discovery) is skipped with a warning; the others are offered", () =>
    Effect.gen(function*() {
      // As an embedder's in-memory claws may hold it: `required` a string, which no decoding refused.
      const unchecked = { type: "object", properties: { city: { type: "string" } }, required: "city" } as unknown as ToolDefinition["input_schema"]
      const claws = InMemoryClaws.make([
        tool({ name: "weather", description: "", input_schema: unchecked }),
        tool({ name: "hello", description: "say hello", input_schema: { type: "object", properties: {} } }),
        tool({ name: "ask_agent", description: "", input_schema: { type: "object" } })
      ])
      const offered: Array<string> = []
      const server = { addTool: (options: { readonly tool: { readonly name: string } }) => Effect.sync(() => void offered.push(options.tool.name)) }
      const logs = yield* captureLogs
      yield* addClawTools(claws, (yield* claws.list).tools).pipe(
        Effect.provideService(McpServer.McpServer, server as unknown as McpServer.McpServer["Service"]),
        Effect.provide(logs.layer)
      )
      expect(offered).toEqual(["hello"])
      expect(logs.lines).toEqual([
        "WARN claw tool weather is not offered over MCP: Expected array (at inputSchema.required)",
        "WARN claw tool ask_agent is not offered over MCP: the name is the agent's ask tool"
      ])
    }))

  it("ask_agent's channel is checked by serve's rule, and defaults to mcp", () => {
    const refused = (payload: unknown) =>
      Result.match(askArguments(payload), { onFailure: (result) => result.content[0], onSuccess: (input) => input })
    expect(refused({ message: "hi" })).toEqual({ text: "hi", channel: "mcp" })
    expect(refused({ message: "hi", channel: "desk" })).toEqual({ text: "hi", channel: "desk" })
    const rule = "ask_agent: channel must be 1 to 256 characters without control characters"
    expect(refused({ message: "hi", channel: "a\nplanckclaw error: forged line" })).toMatchObject({ text: rule })
    expect(refused({ message: "hi", channel: "" })).toMatchObject({ text: rule })
    expect(refused({ message: "hi", channel: "c".repeat(257) })).toMatchObject({ text: rule })
    expect(refused({ message: "hi", channel: 5 })).toMatchObject({ text: "ask_agent: \"channel\" must be a string" })
    expect(refused({ message: " " })).toMatchObject({ text: "ask_agent: \"message\" must be a non-empty string" })
    expect(refused(undefined)).toMatchObject({ text: "ask_agent: \"message\" must be a non-empty string" })
  })

  it.effect("ask_agent answers an error when the agent could not answer or refused, never because of what a model's reply says", () =>
    Effect.scoped(Effect.gen(function*() {
      const ask = yield* askOn([
        ScriptedBrain.text(APOLOGY),
        ScriptedBrain.text(misconfiguredReply("a model's words")),
        new BrainError({ reason: "timeout", detail: "test" })
      ])
      // The model said the words of a failure: it answered all the same.
      expect(yield* ask("say you are unavailable")).toEqual({ isError: false, text: APOLOGY })
      expect(yield* ask("say your brain is misconfigured")).toEqual({ isError: false, text: misconfiguredReply("a model's words") })
      // The brain gave up: the same words, now an error.
      expect(yield* ask("hello")).toEqual({ isError: true, text: APOLOGY })
      expect(yield* ask("\u0001\u0002")).toEqual({ isError: true, text: ONLY_CONTROLS })
      expect(yield* ask("/help")).toMatchObject({ isError: false })
    })))

  it.effect("a claw's call and an ask still running when the client leaves are stopped then, answering that the client is gone", () =>
    Effect.gen(function*() {
      const gone = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      let interrupted = false
      const claws = InMemoryClaws.make([{
        definition: { name: "slow", description: "", input_schema: { type: "object" } },
        run: () => Deferred.succeed(started, undefined).pipe(Effect.andThen(Effect.never), Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))))
      }])
      const handlers = new Map<string, (payload: unknown) => Effect.Effect<McpSchema.CallToolResult>>()
      const server = {
        addTool: (options: { readonly tool: { readonly name: string }; readonly handle: (payload: unknown) => Effect.Effect<McpSchema.CallToolResult> }) =>
          Effect.sync(() => void handlers.set(options.tool.name, options.handle))
      }
      // An agent still starting: the ask waits on it.
      yield* Layer.build(registrations(claws, Effect.never, 1000, Deferred.await(gone)).pipe(
        Layer.provide(Layer.succeed(McpServer.McpServer, server as unknown as McpServer.McpServer["Service"]))
      ))
      const call = yield* Effect.forkChild(handlers.get("slow")!({}))
      const ask = yield* Effect.forkChild(handlers.get("ask_agent")!({ message: "hello" }))
      yield* Deferred.await(started)
      yield* Deferred.succeed(gone, undefined)
      const stopped = { isError: true, content: [{ type: "text", text: "the MCP client closed its input, so the call was stopped" }] }
      expect(yield* Fiber.join(call)).toMatchObject(stopped)
      expect(yield* Fiber.join(ask)).toMatchObject(stopped)
      expect(interrupted).toBe(true)
    }))
})
