/**
 * The agent's turn returns its outcome: for a journaled message, `respond`
 * gives the reply, whether the exchange is stored (on disk), the tool calls
 * the turn made (name, ok) and the tokens it used; the transport delivers
 * it and calls `delivered`. Real in-memory adapters and a memory directory.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Option } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import { Inbox } from "../../src/memory/Inbox.js"
import { PROMPT_FILE_MAX_BYTES } from "../../src/memory/PromptFiles.js"
import { BrainError } from "../../src/ports/Brain.js"
import * as Turn from "../../src/agent/Turn.js"
import { tempDir } from "../support/Sandbox.js"

const echo: InMemoryClaws.InMemoryTool = {
  definition: { name: "echo", description: "Echoes", input_schema: { type: "object", properties: {} } },
  run: (input) => Effect.succeed({ content: JSON.stringify(input), isError: false })
}

const agentIn = (directory: string, script: ReadonlyArray<ScriptedBrain.ScriptStep>) =>
  Effect.gen(function*() {
    const brain = yield* ScriptedBrain.make(script)
    const context = yield* Layer.build(Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([echo]))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: directory }, { preserveEmptyStrings: true })))
    ))
    return { agent: Context.get(context, Agent.Agent), inbox: Context.get(context, Inbox), brain }
  })

const journal = (directory: string) => {
  const file = path.join(directory, ".inbox.jsonl")
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
}

describe("Agent.respond", () => {
  it.effect("gives a message's outcome: reply, stored on disk, the tool calls with name and ok, the usage", () =>
    Effect.scoped(Effect.gen(function*() {
      const directory = yield* tempDir("planckclaw-respond-")
      const { agent, inbox } = yield* agentIn(directory, [
        {
          ...ScriptedBrain.toolUse([
            { id: "t1", name: "echo", input: { n: 1 } },
            { id: "t2", name: "no-such-tool", input: {} }
          ]),
          usage: { input_tokens: 120, output_tokens: 30, cache_creation_input_tokens: 7 }
        },
        { ...ScriptedBrain.text("done with tools"), usage: { input_tokens: 200, output_tokens: 12, cache_read_input_tokens: 100 } }
      ])
      const pending = yield* inbox.accept({ channel: "me", text: "use your tools" })
      const outcome = yield* agent.respond(pending)
      expect(outcome).toEqual(Option.some({
        reply: "done with tools",
        stored: true,
        toolCalls: [{ name: "echo", ok: true }, { name: "no-such-tool", ok: false }],
        usage: { input: 320, output: 42, cacheWrite: 7, cacheRead: 100 }
      }))
      // Stored means on disk, before the transport has delivered anything.
      expect(fs.readFileSync(path.join(directory, "history.jsonl"), "utf8")).toBe(
        "{\"role\":\"user\",\"content\":\"use your tools\"}\n{\"role\":\"assistant\",\"content\":\"done with tools\"}\n"
      )
      // Until delivered, the journal keeps the message with its decided reply (a crash delivers it again).
      expect(journal(directory)).toContain("done with tools")
      yield* agent.delivered(pending, outcome)
      expect(journal(directory)).toBe("")
    })))

  it.effect("a reply that needs no brain made no tool calls and used nothing; a blank message has none", () =>
    Effect.scoped(Effect.gen(function*() {
      const directory = yield* tempDir("planckclaw-respond-")
      const { agent, brain, inbox } = yield* agentIn(directory, [])
      const refused = yield* agent.respond(yield* inbox.accept({ channel: "me", text: "\u0001\u0002" }))
      expect(refused).toEqual(Option.some({ reply: Agent.ONLY_CONTROLS, stored: false, notAnswered: "refused", toolCalls: [], usage: Turn.NO_USAGE }))
      expect(yield* agent.respond(yield* inbox.accept({ channel: "me", text: "  \n" }))).toEqual(Option.none())
      expect(yield* brain.requests).toEqual([])
      expect(fs.existsSync(path.join(directory, "history.jsonl")) ? fs.readFileSync(path.join(directory, "history.jsonl"), "utf8") : "").toBe("")
    })))

  it.effect("a reply that is no answer says so (notAnswered), wherever it is made; an answer never does, whatever it says", () =>
    Effect.scoped(Effect.gen(function*() {
      const directory = yield* tempDir("planckclaw-respond-")
      const { agent, inbox } = yield* agentIn(directory, [
        ScriptedBrain.text(Turn.APOLOGY),
        new BrainError({ reason: "timeout", detail: "test" }),
        new BrainError({ reason: "fatal", detail: "test", misconfigured: { problem: "the key was refused", setting: "ANTHROPIC_API_KEY" } })
      ])
      const said = (text: string) =>
        Effect.map(
          Effect.flatMap(inbox.accept({ channel: "me", text }), agent.respond),
          Option.map((outcome) => [outcome.reply.slice(0, 30), outcome.notAnswered])
        )
      // The model saying the apology's words answered; a command's reply is an answer too.
      expect(yield* said("say you are unavailable")).toEqual(Option.some([Turn.APOLOGY.slice(0, 30), undefined]))
      expect(yield* said("/help")).toMatchObject(Option.some([expect.any(String), undefined]))
      expect(yield* said("hello")).toEqual(Option.some([Turn.APOLOGY.slice(0, 30), "failed"]))
      expect(yield* said("hello")).toEqual(Option.some([Turn.misconfiguredReply("").slice(0, 30), "failed"]))
      expect(yield* said("x".repeat(70_000))).toEqual(Option.some(["Your message is 70000 bytes; t", "refused"]))
      expect(yield* said("a \ud800 b")).toMatchObject(Option.some([expect.any(String), "refused"]))
      expect(yield* said("\u0001")).toEqual(Option.some([Agent.ONLY_CONTROLS.slice(0, 30), "refused"]))
      fs.writeFileSync(path.join(directory, "soul.md"), "x".repeat(PROMPT_FILE_MAX_BYTES + 1))
      expect(yield* said("hello")).toEqual(Option.some([Turn.memoryUnusableReply("").slice(0, 30), "failed"]))
    })))

  it.effect("a reply decided before a crash is given again, stored once, with no second turn", () =>
    Effect.scoped(Effect.gen(function*() {
      const directory = yield* tempDir("planckclaw-respond-")
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const { agent, inbox } = yield* agentIn(directory, [ScriptedBrain.text("the first answer")])
        const pending = yield* inbox.accept({ channel: "me", text: "hello" })
        // Answered, never delivered: the journal keeps it for the next start.
        return yield* agent.respond(pending)
      }))
      expect(Option.map(first, (outcome) => outcome.reply)).toEqual(Option.some("the first answer"))
      const { agent, brain, inbox } = yield* agentIn(directory, [])
      expect(inbox.recovered).toHaveLength(1)
      const again = yield* agent.respond(inbox.recovered[0]!)
      expect(again).toEqual(Option.some({ reply: "the first answer", stored: true, toolCalls: [], usage: Turn.NO_USAGE }))
      expect(yield* brain.requests).toEqual([])
      expect(fs.readFileSync(path.join(directory, "history.jsonl"), "utf8").trim().split("\n")).toHaveLength(2)
    })))
})
