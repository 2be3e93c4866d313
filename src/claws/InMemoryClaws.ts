/**
 * Claws from a table of tool definitions and handlers, for tests and for
 * embedding an agent whose tools are plain Effect functions.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Claws, type ClawsService, type ToolDefinition, type ToolResult, unknownTool } from "../ports/Claws.js"

export interface InMemoryTool {
  readonly definition: ToolDefinition
  readonly run: (input: unknown) => Effect.Effect<ToolResult>
}

export const make = (tools: ReadonlyArray<InMemoryTool>): ClawsService => {
  const byName = new Map(tools.map((tool) => [tool.definition.name, tool]))
  return {
    list: Effect.succeed({ tools: tools.map((tool) => tool.definition), problems: [] }),
    call: (name, input) => {
      const tool = byName.get(name)
      return tool === undefined ? Effect.succeed(unknownTool(name)) : tool.run(input)
    }
  }
}

export const layer = (tools: ReadonlyArray<InMemoryTool>): Layer.Layer<Claws> => Layer.succeed(Claws, make(tools))
