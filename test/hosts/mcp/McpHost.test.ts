/**
 * What both MCP servers (`planckclaw mcp`, serve's POST /v1/mcp) share:
 * which claws they offer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as McpServer from "effect/ai/McpServer"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import { addClawTools } from "../../../src/hosts/mcp/McpHost.js"
import type { ToolDefinition } from "../../../src/ports/Claws.js"
import { captureLogs } from "../../support/LogCapture.js"

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
})
