/**
 * Faults of the brain: the built `planckclaw run` (terminal bridge, piped
 * stdin) against a loopback Messages API that fails one way per test. Each
 * test sends a message that meets the fault and one after it: the first gets
 * a sensible answer, the second proves the loop still runs, history holds
 * exactly what was answered, and nothing is left running.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { APOLOGY } from "../../src/agent/Agent.js"
import { misconfiguredReply } from "../../src/agent/Turn.js"
import {
  apiError,
  cutShort,
  make as brainServer,
  drop,
  echo,
  type Handler,
  hang,
  lastUserText,
  message,
  replies,
  respond,
  text,
  toolUse,
  unusedPort
} from "../support/AnthropicServer.js"
import { fifosLeft } from "../support/Pipes.js"
import { answered, sandbox, session, SHIPPED_CLAWS } from "./Campaign.js"
import { planckclaw, strays } from "./Processes.js"

const TIMEOUT = 120_000

describe("faults: brain", () => {
  it.live("brain: connection refused → said at once with the URL, nothing stored; answered once the API is back", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const port = yield* unusedPort
      const proc = yield* planckclaw(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` }))
      yield* proc.write("first\n")
      const refused = misconfiguredReply("nothing is listening at the model server's address: is it running?")
      expect(yield* proc.awaitLines(1)).toEqual([refused])
      expect(proc.stderr()).toContain(`nothing is listening at http://127.0.0.1:${port}: is the model server running?`)
      const server = yield* brainServer(echo, port)
      yield* proc.write("second\n")
      expect(yield* proc.awaitLines(2)).toEqual([refused, "re: second"])
      yield* proc.closeInput
      // Piped: one message got no real answer.
      expect((yield* proc.ended).code).toBe(3)
      expect((yield* server.requests).length).toBe(1)
      expect(box.memoryFile("history.jsonl")).toBe(answered(["second", "re: second"]))
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)

  it.live("brain: the connection drops before an answer → answered after the retry", () =>
    Effect.gen(function*() {
      const t = yield* session(replies(drop, text("after the drop"), text("B")), { PLANCKCLAW_BRAIN_RETRIES: "1" }, [
        "first",
        "second"
      ])
      expect(t.replies).toEqual(["after the drop", "B"])
      expect(t.requests).toHaveLength(3)
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["first", "after the drop"], ["second", "B"]))
    }), TIMEOUT)

  it.live("brain: a hang past the timeout → answered after the retry", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(hang, text("after the hang"), text("B")),
        { PLANCKCLAW_BRAIN_TIMEOUT: "1", PLANCKCLAW_BRAIN_RETRIES: "1" },
        ["first", "second"]
      )
      expect(t.replies).toEqual(["after the hang", "B"])
      expect(t.requests).toHaveLength(3)
      expect(t.result.stderr).toContain("no answer within 1s")
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["first", "after the hang"], ["second", "B"]))
    }), TIMEOUT)

  it.live("brain: a hang on every attempt → apology, nothing stored, the next message answered", () =>
    Effect.gen(function*() {
      const t = yield* session(replies(hang, text("B")), { PLANCKCLAW_BRAIN_TIMEOUT: "1" }, ["first", "second"])
      expect(t.replies).toEqual([APOLOGY, "B"])
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
    }), TIMEOUT)

  it.live("brain: a 500 then a 200 → answered after the retry", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(apiError(500, "api_error", "Internal server error"), text("after the 500"), text("B")),
        { PLANCKCLAW_BRAIN_RETRIES: "1" },
        ["first", "second"]
      )
      expect(t.replies).toEqual(["after the 500", "B"])
      expect(t.requests).toHaveLength(3)
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["first", "after the 500"], ["second", "B"]))
    }), TIMEOUT)

  it.live("brain: a 529 then a 200 → answered after the retry", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(apiError(529, "overloaded_error", "Overloaded"), text("after the 529"), text("B")),
        { PLANCKCLAW_BRAIN_RETRIES: "1" },
        ["first", "second"]
      )
      expect(t.replies).toEqual(["after the 529", "B"])
      expect(t.requests).toHaveLength(3)
      expect(t.result.stderr).toContain("overloaded_error")
    }), TIMEOUT)

  it.live("brain: a 429 with retry-after then a 200 → answered after the wait", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(apiError(429, "rate_limit_error", "Slow down", { "retry-after": "1" }), text("after the 429"), text("B")),
        { PLANCKCLAW_BRAIN_RETRIES: "1" },
        ["first", "second"]
      )
      expect(t.replies).toEqual(["after the 429", "B"])
      expect(t.requests).toHaveLength(3)
      expect(t.result.stderr).toContain("rate_limit_error")
    }), TIMEOUT)

  it.live("brain: a 529 on every attempt → apology once the retries run out, nothing stored, loop goes on", () =>
    Effect.gen(function*() {
      const overloaded = apiError(529, "overloaded_error", "Overloaded")
      const t = yield* session(replies(overloaded, overloaded, text("B")), { PLANCKCLAW_BRAIN_RETRIES: "1" }, [
        "first",
        "second"
      ])
      expect(t.replies).toEqual([APOLOGY, "B"])
      expect(t.requests).toHaveLength(3)
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
    }), TIMEOUT)

  it.live("brain: a 400 → misconfigured reply at once (no retry), the API's words and the setting logged, loop goes on", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(apiError(400, "invalid_request_error", "messages: roles must alternate"), text("B")),
        { PLANCKCLAW_BRAIN_RETRIES: "3" },
        ["first", "second"]
      )
      expect(t.replies).toEqual([misconfiguredReply("the API refused the request as invalid"), "B"])
      expect(t.requests).toHaveLength(2)
      expect(t.result.stderr).toContain("roles must alternate")
      expect(t.result.stderr).toContain("fix PLANCKCLAW_MODEL")
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
    }), TIMEOUT)

  it.live("brain: a 200 whose body is not JSON → apology, loop goes on", () =>
    Effect.gen(function*() {
      const t = yield* session(replies(respond(200, "this is not json"), text("B")), {}, ["first", "second"])
      expect(t.replies).toEqual([APOLOGY, "B"])
      expect(t.result.stderr).toContain("not JSON")
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
    }), TIMEOUT)

  it.live("brain: a 200 whose JSON is cut short → apology, loop goes on", () =>
    Effect.gen(function*() {
      const cut = respond(200, `{"id":"msg_1","type":"message","content":[{"type":"text","text":"Hel`, {
        "content-type": "application/json"
      })
      const t = yield* session(replies(cut, text("B")), {}, ["first", "second"])
      expect(t.replies).toEqual([APOLOGY, "B"])
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
    }), TIMEOUT)

  it.live("brain: the connection drops mid-body → answered after the retry", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ content: [{ type: "text", text: "never whole" }], stop_reason: "end_turn" })
      const t = yield* session(
        replies(cutShort(body, 20), text("after the cut"), text("B")),
        { PLANCKCLAW_BRAIN_RETRIES: "1" },
        ["first", "second"]
      )
      expect(t.replies).toEqual(["after the cut", "B"])
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["first", "after the cut"], ["second", "B"]))
    }), TIMEOUT)

  it.live("brain: an HTML page (a proxy's 502, then a 200) → apology, loop goes on", () =>
    Effect.gen(function*() {
      const page = "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
      const t = yield* session(
        replies(
          respond(502, page, { "content-type": "text/html" }),
          respond(200, page, { "content-type": "text/html" }),
          text("B")
        ),
        { PLANCKCLAW_BRAIN_RETRIES: "1" },
        ["first", "second"]
      )
      expect(t.replies).toEqual([APOLOGY, "B"])
      expect(t.requests).toHaveLength(3)
      expect(t.result.stderr).toContain("Bad Gateway")
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
    }), TIMEOUT)

  it.live("brain: an empty content array → a clear reply, nothing stored, loop goes on", () =>
    Effect.gen(function*() {
      const t = yield* session(replies(message([]), text("B")), {}, ["first", "second"])
      expect(t.replies).toEqual([
        "I have no answer to that (the model returned an empty reply). Please try rephrasing.",
        "B"
      ])
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
    }), TIMEOUT)

  it.live("brain: stop_reason max_tokens → the partial answer, marked as cut; with no text, a clear reply", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(message([{ type: "text", text: "The answer is" }], "max_tokens"), message([], "max_tokens"), text("C")),
        {},
        ["first", "second", "third"]
      )
      expect(t.replies).toEqual([
        "The answer is",
        "",
        "[answer cut short: the model hit its token limit]",
        "My answer was cut off before I could write anything (the model hit its token limit).",
        "C"
      ])
      expect(t.box.memoryFile("history.jsonl")).toBe(
        answered(["first", "The answer is\n\n[answer cut short: the model hit its token limit]"], ["third", "C"])
      )
    }), TIMEOUT)

  it.live("brain: a tool_use naming an unknown tool → the model is told, then the answer", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(
          toolUse([{ id: "tu_1", name: "no_such_tool", input: {} }, { id: "tu_2", name: "bad name!", input: {} }]),
          text("No such tool, sorry."),
          text("B")
        ),
        { CLAWS_DIR: SHIPPED_CLAWS },
        ["first", "second"]
      )
      // The text the model wrote before its calls begins the reply (issue 48).
      expect(t.replies).toEqual(["Let me check.", "", "No such tool, sorry.", "B"])
      expect(t.requests[1]!.body.messages[2]).toEqual({
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "tu_1", content: "Unknown tool: no_such_tool", is_error: true },
          { type: "tool_result", tool_use_id: "tu_2", content: "Unknown tool: bad name!", is_error: true }
        ]
      })
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["first", "Let me check.\n\nNo such tool, sorry."], ["second", "B"]))
    }), TIMEOUT)

  it.live("brain: tool_use input that is not an object → error results, then the answer", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(
          toolUse([
            { id: "tu_1", name: "get_time", input: "now" },
            { id: "tu_2", name: "get_time", input: [1, 2] },
            { id: "tu_3", name: "get_time", input: null },
            { id: "tu_4", name: "get_time", input: {} }
          ]),
          text("Done."),
          text("B")
        ),
        { CLAWS_DIR: SHIPPED_CLAWS },
        ["first", "second"]
      )
      expect(t.replies).toEqual(["Let me check.", "", "Done.", "B"])
      const results = t.requests[1]!.body.messages[2]!.content as Array<
        { tool_use_id: string; content: string; is_error?: boolean }
      >
      expect(results.map((result) => [result.tool_use_id, result.is_error === true])).toEqual([
        ["tu_1", true],
        ["tu_2", true],
        ["tu_3", true],
        ["tu_4", false]
      ])
      expect(results[0]!.content).toBe("Tool input must be a JSON object, got a string")
      expect(results[1]!.content).toBe("Tool input must be a JSON object, got an array")
      expect(results[2]!.content).toBe("Tool input must be a JSON object, got null")
      expect(results[3]!.content).toMatch(/Unix timestamp: \d+/)
    }), TIMEOUT)

  it.live("brain: a model that keeps calling tools past the round limit → a clear message, nothing stored", () =>
    Effect.gen(function*() {
      const handler: Handler = (request) =>
        lastUserText(request.body) === "loop forever"
          ? toolUse([{ id: `tu_${request.body.messages.length}`, name: "get_time", input: {} }])
          : text(`re: ${lastUserText(request.body)}`)
      const t = yield* session(handler, { CLAWS_DIR: SHIPPED_CLAWS, PLANCKCLAW_MAX_TOOL_ROUNDS: "2" }, [
        "loop forever",
        "second"
      ])
      expect(t.replies).toEqual([
        "I stopped after 2 rounds of tool calls without reaching an answer. Please try again, perhaps with a narrower question.",
        "re: second"
      ])
      // The first request and two rounds of results, then the next message.
      expect(t.requests.map((request) => request.body.messages.length)).toEqual([1, 3, 5, 1])
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "re: second"]))
    }), TIMEOUT)

  it.live("brain: a 200 with a root-level error key → apology, loop goes on", () =>
    Effect.gen(function*() {
      const t = yield* session(
        replies(respond(200, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }), text("B")),
        {},
        ["first", "second"]
      )
      expect(t.replies).toEqual([APOLOGY, "B"])
      expect(t.box.memoryFile("history.jsonl")).toBe(answered(["second", "B"]))
      expect(fifosLeft(t.box.runDir)).toEqual([])
    }), TIMEOUT)
})
