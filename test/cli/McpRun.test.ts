/**
 * End to end, as a user runs it: the built `planckclaw run` with an
 * mcp.json in its home naming the reference server "everything" (from
 * node_modules), against an Anthropic-compatible server on loopback whose
 * model calls the server's tools.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as McpServers from "../support/McpServers.js"
import { sandbox } from "../support/Sandbox.js"

const key = "test-key-not-secret"

const setup = (handler: AnthropicServer.Handler, mcpJson: string) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url }, "planckclaw-mcp-run-")
    fs.writeFileSync(box.path("mcp.json"), mcpJson)
    box.claw("dice.sh", `#TOOLS:{"name":"roll","description":"roll a die","input_schema":{"type":"object","properties":{}}}\necho 4\n`)
    return { server, box, env: { ...box.env, PLANCKCLAW_HOME: box.dir } }
  })

describe("planckclaw run with mcp.json", () => {
  it.live("offers the server's tools beside the claws; the model's echo call gets the echo, and no secret reaches the server", () =>
    Effect.gen(function*() {
      const t = yield* setup(
        AnthropicServer.replies(
          AnthropicServer.toolUse([
            { id: "tu_1", name: "mcp__everything__echo", input: { message: "hi from the model" } },
            { id: "tu_2", name: "mcp__everything__get-env", input: {} }
          ]),
          AnthropicServer.text("The server echoed.")
        ),
        JSON.stringify({ mcpServers: { everything: McpServers.everything({ GREETING: "hello" }) } })
      )
      const result = yield* Cli.run(["run"], { cwd: t.box.dir, env: t.env, input: "use the echo tool\n" })
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("Let me check.\n\nThe server echoed.\n")
      const [first, second] = yield* t.server.awaitRequests(2)
      const names = (first!.body.tools ?? []).map((tool) => tool.name)
      expect(names).toContain("roll")
      expect(names).toContain("mcp__everything__echo")
      const results = second!.body.messages[2]!.content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>
      expect(results[0]).toMatchObject({ tool_use_id: "tu_1", content: "Echo: hi from the model" })
      const env = JSON.parse(results[1]!.content) as Record<string, string>
      expect(env.GREETING).toBe("hello")
      expect(JSON.stringify(env)).not.toContain(key)
      expect(env).not.toHaveProperty("ANTHROPIC_BASE_URL")
    }), 60_000)

  it.live("refuses a bad mcp.json with its file and the reason, and the claws still work", () =>
    Effect.gen(function*() {
      const t = yield* setup(
        AnthropicServer.replies(
          AnthropicServer.toolUse([{ id: "tu_1", name: "roll", input: {} }]),
          AnthropicServer.text("You rolled 4.")
        ),
        "{ \"mcpServers\": { \"broken\": { \"args\": [] } } }"
      )
      const result = yield* Cli.run(["run"], { cwd: t.box.dir, env: t.env, input: "roll\n" })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("Let me check.\n\nYou rolled 4.\n")
      expect(result.stderr).toContain(`${t.box.path("mcp.json")}: server "broken"`)
      expect(result.stderr).toContain("needs \"command\"")
      const [first] = yield* t.server.awaitRequests(1)
      expect((first!.body.tools ?? []).map((tool) => tool.name)).toEqual(["roll", "schedule_add", "schedule_list", "schedule_remove"])
    }), 60_000)
})
