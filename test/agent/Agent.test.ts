import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer, Logger, Option, Queue } from "effect"
import { TestClock } from "effect/testing"
import { vi } from "vitest"
import * as Agent from "../../src/agent/Agent.js"
import { APOLOGY, ONLY_CONTROLS } from "../../src/agent/Agent.js"
import { BrainError } from "../../src/ports/Brain.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import { text, toolUse } from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import type { InMemoryTool } from "../../src/claws/InMemoryClaws.js"
import * as Intake from "../../src/agent/Intake.js"
import { isBlank, sanitize } from "../../src/ports/Interact.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import { diceTool, harness, line, timeTool } from "../support/Harness.js"

const toolSpecs = [
  { name: "get_time", description: "Current time", input_schema: { type: "object", properties: {} } },
  {
    name: "roll_dice",
    description: "Roll dice",
    input_schema: { type: "object", properties: { sides: { type: "integer" } } }
  }
]

describe("Agent", () => {
  it.effect("runs two tools of one response, then a second round, and sends the exact requests", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        soul: "You are Planck.",
        script: [
          toolUse([
            { id: "tu_1", name: "get_time", input: {} },
            { id: "tu_2", name: "roll_dice", input: { sides: 20 } }
          ], "Let me check."),
          toolUse([{ id: "tu_3", name: "get_time", input: {} }]),
          text("It is 1700000000 and you rolled 4.")
        ],
        tools: [timeTool, diceTool],
        // The requests without prompt-caching breakpoints (test/agent/PromptCache.test.ts has them).
        settings: { PLANCKCLAW_PROMPT_CACHE: "0" }
      })
      const reply = yield* h.say("time and a d20?")
      // What the model said before its tool calls begins the reply (issue 48).
      expect(reply).toMatchObject({ channel: "cli", text: "Let me check.\n\nIt is 1700000000 and you rolled 4." })

      const requests = yield* h.requests
      expect(requests).toHaveLength(3)
      const base = { model: "test-model", max_tokens: 1024, system: "You are Planck.", tools: toolSpecs }
      const firstRound = [
        { role: "user", content: "time and a d20?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Let me check." },
            { type: "tool_use", id: "tu_1", name: "get_time", input: {} },
            { type: "tool_use", id: "tu_2", name: "roll_dice", input: { sides: 20 } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "tu_1", content: "1700000000" },
            { type: "tool_result", tool_use_id: "tu_2", content: "rolled d20: 4" }
          ]
        }
      ]
      expect(requests[0]).toEqual({ ...base, messages: [{ role: "user", content: "time and a d20?" }] })
      expect(requests[1]).toEqual({ ...base, messages: firstRound })
      expect(requests[2]).toEqual({
        ...base,
        messages: [
          ...firstRound,
          { role: "assistant", content: [{ type: "tool_use", id: "tu_3", name: "get_time", input: {} }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "tu_3", content: "1700000000" }] }
        ]
      })
      // Tool calls are not stored: only the user text and the reply, the text before the calls included.
      expect(h.read("history.jsonl")).toBe(
        line("user", "time and a d20?") + line("assistant", "Let me check.\n\nIt is 1700000000 and you rolled 4.")
      )
    }))

  it.effect("builds the prompt from soul, summary and the history tail, dropping a leading assistant line", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        soul: "Soul text.\n",
        summary: "The user is Marc.\n",
        history: line("user", "u1") + line("assistant", "a1") + line("user", "u2") + line("assistant", "a2"),
        // A plain HISTORY_KEEP tail: the anchored window of prompt caching is test/agent/PromptCache.test.ts's.
        settings: { HISTORY_KEEP: "3", PLANCKCLAW_PROMPT_CACHE: "0" },
        script: [text("hello")]
      })
      yield* h.say("u3")
      const [request] = yield* h.requests
      expect(request).toEqual({
        model: "test-model",
        max_tokens: 1024,
        system: "Soul text.\n---\nCONVERSATION SUMMARY:\nThe user is Marc.",
        messages: [
          { role: "user", content: "u2" },
          { role: "assistant", content: "a2" },
          { role: "user", content: "u3" }
        ]
      })
    }))

  it.effect("reads soul.md fresh for every turn and falls back to the default persona", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text("one"), text("two")], settings: { PLANCKCLAW_PROMPT_CACHE: "0" } })
      yield* h.say("first")
      yield* h.write("soul.md", "You are a pirate.")
      yield* h.say("second")
      const requests = yield* h.requests
      expect(requests.map((r) => r.system)).toEqual(["You are a helpful personal assistant.", "You are a pirate."])
    }))

  it.effect("answers with the apology and stores nothing when the brain gives up", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        script: [new BrainError({ reason: "timeout", detail: "test" }), text("back again")]
      })
      expect((yield* h.say("hello")).text).toBe(APOLOGY)
      expect(h.read("history.jsonl")).toBeUndefined()
      expect((yield* h.say("hello?")).text).toBe("back again")
      expect(h.read("history.jsonl")).toBe(line("user", "hello?") + line("assistant", "back again"))
    }))

  it.effect("stops a model that keeps calling tools after the round limit", () =>
    Effect.gen(function*() {
      const loop = toolUse([{ id: "x", name: "get_time", input: {} }])
      const h = yield* harness({
        settings: { PLANCKCLAW_MAX_TOOL_ROUNDS: "2" },
        script: [loop, loop, loop, text("never reached")],
        tools: [timeTool]
      })
      const reply = yield* h.say("loop forever")
      expect(reply.text).toContain("I stopped after 2 rounds of tool calls")
      expect(yield* h.requests).toHaveLength(3)
      expect(h.read("history.jsonl")).toBeUndefined()
    }))

  it.effect("answers unknown tools and non-object input with error results", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        script: [
          toolUse([{ id: "a", name: "no_such_tool", input: {} }, { id: "b", name: "get_time", input: "now" }]),
          text("sorry")
        ],
        tools: [timeTool]
      })
      yield* h.say("try")
      const requests = yield* h.requests
      expect(requests[1]!.messages[2]).toEqual({
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "a", content: "Unknown tool: no_such_tool", is_error: true },
          { type: "tool_result", tool_use_id: "b", content: "Tool input must be a JSON object, got a string", is_error: true }
        ]
      })
    }))

  it.effect("answers empty content and max_tokens sensibly", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        script: [
          { content: [], stop_reason: "end_turn" },
          { content: [{ type: "text", text: "Half an ans" }], stop_reason: "max_tokens" }
        ]
      })
      expect((yield* h.say("a")).text).toContain("empty reply")
      expect((yield* h.say("b")).text).toBe("Half an ans\n\n[answer cut short: the model hit its token limit]")
      expect(h.read("history.jsonl")).toBe(
        line("user", "b") + line("assistant", "Half an ans\n\n[answer cut short: the model hit its token limit]")
      )
    }))

  it.effect("rejects an oversized message with a clear reply, ignores empty ones, keeps order", () =>
    Effect.gen(function*() {
      const h = yield* harness({ settings: { PLANCKCLAW_MAX_MESSAGE_BYTES: "10" }, script: [text("ok")] })
      yield* h.offer("x".repeat(11), "c1")
      yield* h.offer("   ", "c2")
      yield* h.offer("short", "c3")
      const first = yield* h.reply
      const second = yield* h.reply
      expect(first.channel).toBe("c1")
      expect(first.text).toContain("Your message is 11 bytes; the limit is 10 bytes")
      expect(second).toMatchObject({ channel: "c3", text: "ok" })
      expect((yield* h.requests).length).toBe(1)
    }))

  it.effect("refuses a message of control characters alone with a reply (a bridge waiting for one is not left waiting)", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text("ok")] })
      yield* h.offer("\u0001\u0007\u0085", "c1")
      yield* h.offer("\u00a0", "c2")
      const first = yield* h.reply
      const second = yield* h.reply
      expect(first).toMatchObject({ channel: "c1", text: ONLY_CONTROLS })
      // Not ASCII blank: a bridge's [:space:] test sends it, so the agent answers it.
      expect(second).toMatchObject({ channel: "c2", text: "ok" })
      expect((yield* h.requests).length).toBe(1)
    }))

  it.effect("queues messages that arrive during a turn and answers them in order", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        script: [
          () => Effect.sleep("10 seconds").pipe(Effect.as(text("first answer"))),
          text("second answer")
        ]
      })
      yield* h.offer("one", "a")
      yield* h.offer("two", "b")
      const replies = yield* Effect.forkChild(Effect.all([h.reply, h.reply]))
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.join(replies)).toMatchObject([
        { channel: "a", text: "first answer" },
        { channel: "b", text: "second answer" }
      ])
    }))

  it.effect("survives a defect inside a tool: the message gets the apology, the loop goes on", () =>
    Effect.gen(function*() {
      const broken: InMemoryTool = { definition: timeTool.definition, run: () => Effect.die(new Error("boom")) }
      const h = yield* harness({
        script: [toolUse([{ id: "a", name: "get_time", input: {} }]), text("fine now")],
        tools: [broken]
      })
      expect((yield* h.say("crash please")).text).toBe(APOLOGY)
      expect((yield* h.say("and now?")).text).toBe("fine now")
    }))
})

describe("Intake", () => {
  it("is what Agent.serve names", () => {
    expect(Agent.serve).toBe(Intake.run)
  })

  it.effect("serves a bridge for the lifetime of its Layer", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-intake-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const users = yield* InMemoryInteract.make
      const brain = yield* ScriptedBrain.make([text("served")])
      yield* Layer.build(Intake.layer.pipe(
        Layer.provide(Agent.layerWithMemory),
        Layer.provide(Layer.mergeAll(InMemoryInteract.layer(users), ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_DIR", directory]])), { preserveEmptyStrings: true })))
      ))
      yield* users.offer({ channel: "c", text: "hi" })
      expect(yield* Queue.take(users.replies)).toMatchObject({ channel: "c", text: "served" })
    }))

  it.effect("logs to stderr, never to stdout where a host's output goes", () =>
    Effect.gen(function*() {
      const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true)
      const stdout = vi.spyOn(console, "log")
      yield* Effect.addFinalizer(() => Effect.sync(() => (stderr.mockRestore(), stdout.mockRestore())))
      // Effect's default logger (the one that writes to stdout), as a host has it.
      const h = yield* harness({ settings: { PLANCKCLAW_MAX_MESSAGE_BYTES: "10" }, script: [] }).pipe(
        Effect.provide(Logger.layer([Logger.defaultLogger], { mergeWithExisting: true }))
      )
      yield* h.say("x".repeat(11))
      const written = stderr.mock.calls.map(([chunk]) => String(chunk)).join("")
      expect(written).toContain("planckclaw warn: rejected a 11-byte message from cli")
      expect(stdout.mock.calls.flat().join(" ")).not.toContain("rejected a 11-byte message")
    }))
})

describe("sanitize", () => {
  it("removes control characters, normalises CR, keeps tabs and newlines", () => {
    expect(sanitize("a\u0000b\u0007c\r\nd\te\u001b[31m")).toEqual(Option.some("abc\nd\te[31m"))
  })
  it("treats whitespace-only text as nothing to answer", () => {
    expect(sanitize(" \n\t ")._tag).toBe("None")
    expect(sanitize("\u0001\r\n ")._tag).toBe("None")
  })
  it("calls blank only ASCII spaces, tabs and line breaks", () => {
    expect(isBlank(" \t\n\r\v\f")).toBe(true)
    expect(isBlank("")).toBe(true)
    expect(isBlank("\u00a0")).toBe(false)
    expect(isBlank("\u0001")).toBe(false)
    expect(sanitize("\u00a0")).toEqual(Option.some("\u00a0"))
  })
})
