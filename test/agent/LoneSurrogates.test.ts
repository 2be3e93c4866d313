/**
 * Lone UTF-16 surrogates never reach a brain: the real agent over in-memory
 * transports (an embedding host's, and what Discord and serve feed the same
 * agent), with every request the brain got checked string by string.
 * The built command's entrances (HTTP, Discord, an existing history on
 * loopback) are in test/cli/LoneSurrogatesCli.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { text, toolUse } from "../../src/brain/ScriptedBrain.js"
import type { InMemoryTool } from "../../src/claws/InMemoryClaws.js"
import { harness, line } from "../support/Harness.js"
import { captureLogs } from "../support/LogCapture.js"
import { HIGH, loneSurrogates } from "../support/LoneSurrogates.js"

const REPLACEMENT = "\uFFFD"

describe("lone surrogates", () => {
  it.effect("a message holding one is refused with a reply naming it; the brain is not asked and nothing is stored", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text("hello")] })
      const refused = yield* h.say(`half ${HIGH} an emoji`)
      expect(refused.text).toContain("lone UTF-16 surrogate (\\ud83d at character 6)")
      expect(refused.text).toContain("Nothing was processed")
      expect(loneSurrogates(refused.text)).toEqual([])
      expect(yield* h.requests).toEqual([])
      // The next message is answered as usual.
      expect((yield* h.say("hi")).text).toBe("hello")
      expect(h.read("history.jsonl")).toBe(line("user", "hi") + line("assistant", "hello"))
    }))

  it.effect("a model's answer holding one is stored and delivered with U+FFFD, and the next request carries none", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text(`ok ${HIGH}`), text("again")] })
      expect((yield* h.say("first")).text).toBe(`ok ${REPLACEMENT}`)
      expect((yield* h.say("second")).text).toBe("again")
      expect(h.read("history.jsonl")).toBe(
        line("user", "first") + line("assistant", `ok ${REPLACEMENT}`) + line("user", "second") + line("assistant", "again")
      )
      const requests = yield* h.requests
      expect(requests).toHaveLength(2)
      expect(loneSurrogates(requests)).toEqual([])
    }))

  it.effect("a tool round echoes the model's text and tool input, a claw's catalogue and result, all without one", () =>
    Effect.gen(function*() {
      const echo: InMemoryTool = {
        definition: {
          name: "echo",
          description: `Echo ${HIGH}`,
          input_schema: { type: "object", properties: { [`q${HIGH}`]: { type: "string", description: `half ${HIGH}` } } }
        },
        run: () => Effect.succeed({ content: `result ${HIGH}`, isError: false })
      }
      const h = yield* harness({
        script: [toolUse([{ id: "tu_1", name: "echo", input: { q: `x${HIGH}` } }], `Let me check ${HIGH}`), text("done")],
        tools: [echo]
      })
      expect((yield* h.say("go")).text).toBe(`Let me check ${REPLACEMENT}\n\ndone`)
      const requests = yield* h.requests
      expect(requests).toHaveLength(2)
      expect(loneSurrogates(requests)).toEqual([])
      const second = requests[1]!
      expect(second.tools?.[0]?.description).toBe(`Echo ${REPLACEMENT}`)
      expect(second.messages.slice(1)).toEqual([
        {
          role: "assistant",
          content: [
            { type: "text", text: `Let me check ${REPLACEMENT}` },
            { type: "tool_use", id: "tu_1", name: "echo", input: { q: `x${REPLACEMENT}` } }
          ]
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "tu_1", content: `result ${REPLACEMENT}` }] }
      ])
    }))

  it.effect("a history line holding one (an older build's, or a hand edit) is sent repaired and reported once", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const h = yield* harness({
        script: [text("one"), text("two")],
        settings: { PLANCKCLAW_PROMPT_CACHE: "0" },
        history: line("user", `half ${HIGH}`) + line("assistant", "noted")
      }).pipe(Effect.provide(logs.layer))
      yield* h.say("hi").pipe(Effect.provide(logs.layer))
      yield* h.say("again").pipe(Effect.provide(logs.layer))
      const requests = yield* h.requests
      expect(loneSurrogates(requests)).toEqual([])
      expect(requests[0]!.messages).toEqual([
        { role: "user", content: `half ${REPLACEMENT}` },
        { role: "assistant", content: "noted" },
        { role: "user", content: "hi" }
      ])
      const reports = logs.lines.filter((entry) => entry.includes("lone UTF-16 surrogate"))
      expect(reports).toHaveLength(1)
      expect(reports[0]).toMatch(/^WARN history\.jsonl: a line holds a lone UTF-16 surrogate/)
      // history.jsonl itself is left as it was.
      expect(h.read("history.jsonl")!.startsWith(line("user", `half ${HIGH}`))).toBe(true)
    }))
})
