/**
 * The tool loop on its own: a snapshot and a text in, a reply out, with a
 * scripted brain and in-memory tools and no memory directory.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Logger } from "effect"
import { BrainError } from "../../src/ports/Brain.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import type { MemorySnapshot } from "../../src/memory/Memory.js"
import * as Turn from "../../src/agent/Turn.js"

const config: Turn.TurnConfig = { model: "test-model", maxTokens: 100, maxToolRounds: 2 }
const snapshot: MemorySnapshot = {
  soul: "Soul.",
  summary: "Summary.",
  history: [{ role: "assistant", content: "dropped" }, { role: "user", content: "u1" }, { role: "assistant", content: "a1" }]
}

const echoTool: InMemoryClaws.InMemoryTool = {
  definition: { name: "echo", description: "Echoes", input_schema: { type: "object", properties: {} } },
  run: (input) => Effect.succeed({ content: JSON.stringify(input), isError: false })
}

const turn = (script: ReadonlyArray<ScriptedBrain.ScriptStep>, tools: ReadonlyArray<InMemoryClaws.InMemoryTool> = []) =>
  Effect.gen(function*() {
    const brain = yield* ScriptedBrain.make(script)
    const exit = yield* Turn.run({ snapshot, text: "question", config }).pipe(
      Effect.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer(tools))),
      Effect.exit
    )
    return { exit, requests: yield* brain.requests }
  })

describe("Turn.run", () => {
  it.effect("answers from soul, summary and history, and says the exchange belongs in history", () =>
    Effect.gen(function*() {
      const { exit, requests } = yield* turn([ScriptedBrain.text("  answer  ")])
      expect(exit).toEqual(Exit.succeed({ reply: "answer", stored: true, toolCalls: [], usage: Turn.NO_USAGE }))
      expect(requests).toEqual([{
        model: "test-model",
        max_tokens: 100,
        system: "Soul.\n---\nCONVERSATION SUMMARY:\nSummary.",
        messages: [
          { role: "user", content: "u1" },
          { role: "assistant", content: "a1" },
          { role: "user", content: "question" }
        ]
      }])
    }))

  it.effect("runs tool rounds and stops after maxToolRounds without storing", () =>
    Effect.gen(function*() {
      const call = ScriptedBrain.toolUse([{ id: "t", name: "echo", input: { n: 1 } }])
      const { exit, requests } = yield* turn([call, call, call, ScriptedBrain.text("never")], [echoTool])
      expect(requests).toHaveLength(3)
      expect(requests[1]!.messages.at(-1)).toEqual({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "t", content: "{\"n\":1}" }]
      })
      expect(Exit.isSuccess(exit) && exit.value.stored).toBe(false)
      expect(Exit.isSuccess(exit) && exit.value.toolCalls).toEqual([{ name: "echo", ok: true }, { name: "echo", ok: true }])
      expect(Exit.isSuccess(exit) && exit.value.reply).toContain("I stopped after 2 rounds of tool calls")
    }))

  it.effect("says an answer the model's safety filter stopped (stop_reason refusal) was cut short, and stores nothing", () =>
    Effect.gen(function*() {
      const outcome = (reply: string) => Exit.succeed({ reply, stored: false, toolCalls: [], usage: Turn.NO_USAGE })
      const partial = yield* turn([{ content: [{ type: "text", text: "Sure. Step one is to " }], stop_reason: "refusal" }])
      expect(partial.exit).toEqual(outcome("Sure. Step one is to\n\n[answer cut short: the model's safety filter stopped it]"))
      const nothing = yield* turn([{ content: [], stop_reason: "refusal" }])
      expect(nothing.exit).toEqual(outcome("My answer was refused before I could write anything (the model's safety filter stopped it)."))
      // A call in a stopped answer may be cut too: it is not run.
      const withCall = yield* turn([{
        content: [{ type: "text", text: "Let me" }, { type: "tool_use", id: "t", name: "echo", input: {} }],
        stop_reason: "refusal"
      }], [echoTool])
      expect(withCall.exit).toEqual(outcome("Let me\n\n[answer cut short: the model's safety filter stopped it]"))
    }))

  it.effect("answers with the apology, not stored, when the brain gives up", () =>
    Effect.gen(function*() {
      const { exit } = yield* turn([new BrainError({ reason: "fatal", detail: "test" })])
      expect(exit).toEqual(Exit.succeed({ reply: Turn.APOLOGY, stored: false, notAnswered: "failed", toolCalls: [], usage: Turn.NO_USAGE }))
    }))

  it.effect("logs what the brain said, not \"timeout\", for a failure that may pass (a 429 after its retries)", () =>
    Effect.gen(function*() {
      const logged: Array<string> = []
      const logger = Logger.make(({ message }) => void logged.push(String(message)))
      const detail = "gave up after 5 attempts: HTTP 429: rate_limit_error: slow down"
      yield* turn([new BrainError({ reason: "timeout", detail })]).pipe(Effect.provide(Logger.layer([logger])))
      expect(logged).toEqual([`brain gave up for now: ${detail}`])
    }))

  it.effect("leaves a defect in a tool to its caller", () =>
    Effect.gen(function*() {
      const broken: InMemoryClaws.InMemoryTool = { definition: echoTool.definition, run: () => Effect.die("boom") }
      const { exit } = yield* turn([ScriptedBrain.toolUse([{ id: "t", name: "echo", input: {} }])], [broken])
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    }))
})
