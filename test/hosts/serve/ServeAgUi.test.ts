/**
 * Each agent of the built `serve` is an AG-UI endpoint, driven here by
 * @ag-ui/client's HttpAgent: the reply arrives as a text message, a tool
 * call as a tool call with its result, behind the token; a retried run
 * (same runId) gets the same reply without a second turn.
 */
import * as crypto from "node:crypto"
import { HttpAgent } from "@ag-ui/client"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import { tool } from "../../support/Sandbox.js"
import { setup, startServe } from "../../support/ServeKit.js"

const brain: AnthropicServer.Handler = (request) => {
  if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
  const last = request.body.messages[request.body.messages.length - 1]
  if (AnthropicServer.lastUserText(request.body) === "what time is it?") {
    return Array.isArray(last?.content) ? AnthropicServer.text("It is noon.") : AnthropicServer.toolUse([{ id: "t1", name: "clock", input: { zone: "UTC" } }])
  }
  return AnthropicServer.text(`re: ${AnthropicServer.lastUserText(request.body)}`)
}

describe("serve's agents as AG-UI endpoints (built command)", () => {
  it.live("an AG-UI client runs an agent: text, a tool call with its result, the token, one turn per runId", () =>
    Effect.gen(function*() {
      const token = `test-token-${crypto.randomUUID()}`
      const { box, env, history, server } = yield* setup(brain, { PLANCKCLAW_HTTP_TOKEN: token })
      box.claw("clock.sh", `${tool("clock")}\necho noon\n`)
      const serve = yield* startServe(box.dir, env)
      const agent = new HttpAgent({ url: `${serve.base}/v1/agents/erin/ag-ui`, headers: { authorization: `Bearer ${token}` } })
      const seen: Array<string> = []
      agent.addMessage({ id: "u1", role: "user", content: "what time is it?" })
      const first = yield* Effect.promise(() =>
        agent.runAgent({ runId: "run-1" }, { onEvent: ({ event }) => void seen.push(event.type) })
      )
      expect(seen[0]).toBe("RUN_STARTED")
      expect(seen[seen.length - 1]).toBe("RUN_FINISHED")
      expect(seen).toEqual(expect.arrayContaining(["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TEXT_MESSAGE_CONTENT"]))
      const toolCall = first.newMessages.find((message) => message.role === "assistant" && (message.toolCalls?.length ?? 0) > 0)
      expect(toolCall?.role === "assistant" ? toolCall.toolCalls?.[0]?.function : undefined).toEqual({ name: "clock", arguments: "{\"zone\":\"UTC\"}" })
      expect(first.newMessages.find((message) => message.role === "tool")?.content).toMatch(/^ok \(\d+ ms\)$/)
      const texts = first.newMessages.filter((message) => message.role === "assistant" && typeof message.content === "string").map((message) => message.content)
      expect(texts).toEqual(["Let me check.", "It is noon."])
      expect(history("erin")).toContain("It is noon.")

      // The same runId again: the reply kept under its key, no second turn.
      const turns = (yield* server.requests).length
      const again = new HttpAgent({ url: `${serve.base}/v1/agents/erin/ag-ui`, headers: { authorization: `Bearer ${token}` } })
      again.addMessage({ id: "u1", role: "user", content: "what time is it?" })
      const retried = yield* Effect.promise(() => again.runAgent({ runId: "run-1" }))
      expect(retried.newMessages.map((message) => message.content)).toEqual(["Let me check.\n\nIt is noon."])
      expect((yield* server.requests).length).toBe(turns)

      // Without the token: refused before any run.
      const stranger = new HttpAgent({ url: `${serve.base}/v1/agents/erin/ag-ui` })
      stranger.addMessage({ id: "u2", role: "user", content: "hi" })
      const refused = yield* Effect.promise(() => stranger.runAgent({ runId: "run-2" }).then(() => "ran", (error: unknown) => String(error)))
      expect(refused).toMatch(/401/)
    }))
})
