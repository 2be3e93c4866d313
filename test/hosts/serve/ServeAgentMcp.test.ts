/**
 * The agent host reads each agent's own mcp.json when it starts the agent:
 * an agent whose directory names server-everything (the real one, from
 * node_modules) is offered its tools and a model's call of its echo gets
 * the echo; another agent of the same host is not offered them; a bad
 * file in a third agent's directory leaves it answering, its claws
 * offered.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as AgentHost from "../../../src/hosts/serve/AgentHost.js"
import { Brain, type MessagesRequest } from "../../../src/ports/Brain.js"
import * as McpServers from "../../support/McpServers.js"
import { settings, tempDir } from "./Kit.js"

/** The tools each request offered; calls mcp__mine__echo when offered, then says what it returned. */
const brain = () => {
  const offered: Array<ReadonlyArray<string>> = []
  const layer = Layer.succeed(Brain, {
    complete: (request: MessagesRequest) =>
      Effect.sync(() => {
        const names = (request.tools ?? []).map((tool) => tool.name)
        offered.push(names)
        const last = request.messages[request.messages.length - 1]!
        const result = typeof last.content === "string" ? undefined : last.content.find((block) => block.type === "tool_result")
        if (result !== undefined) return ScriptedBrain.text(`the tool said: ${JSON.stringify(result.content)}`)
        if (names.includes("mcp__mine__echo")) {
          return ScriptedBrain.toolUse([{ id: "tu_1", name: "mcp__mine__echo", input: { message: "from the model" } }])
        }
        return ScriptedBrain.text(`offered: ${names.join(", ")}`)
      })
  })
  return { offered, layer }
}

const hello = {
  definition: { name: "hello", description: "a claw", input_schema: { type: "object" as const } },
  run: () => Effect.succeed({ content: "hello", isError: false })
}

describe("serve: an agent's own mcp.json", () => {
  it.live("offers its servers to that agent alone, and a bad one leaves the agent answering", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = path.join(root, "agents")
      for (const id of ["alice", "bob", "carol"]) fs.mkdirSync(path.join(agents, id), { recursive: true })
      fs.writeFileSync(path.join(agents, "alice", "mcp.json"), JSON.stringify({ mcpServers: { mine: McpServers.everything() } }))
      fs.writeFileSync(path.join(agents, "carol", "mcp.json"), "{\"mcpServers\": []}")
      const model = brain()
      const host = yield* Layer.build(
        AgentHost.layer.pipe(
          Layer.provide(Layer.merge(model.layer, InMemoryClaws.layer([hello]))),
          Layer.provide(settings({ PLANCKCLAW_AGENTS_DIR: agents, PLANCKCLAW_DIR: path.join(root, "memory"), PLANCKCLAW_PROMPT_CACHE: "0" }))
        )
      ).pipe(Effect.map(Context.get(AgentHost.AgentHost)))

      expect(yield* host.send("alice", { text: "echo something" })).toEqual({ reply: "the tool said: \"Echo: from the model\"", stored: true })
      const bob = yield* host.send("bob", { text: "what have you" })
      expect(bob.reply).toMatch(/^offered: /)
      expect(bob.reply).toContain("hello")
      expect(bob.reply).not.toContain("mcp__")
      const carol = yield* host.send("carol", { text: "and you" })
      expect(carol.reply).toMatch(/^offered: .*hello/)
      expect(carol.reply).not.toContain("mcp__")
    }), 60_000)
})
