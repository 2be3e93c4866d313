/**
 * The request frame encoder's kept JSON (BrainFrame makeRequestFrameEncoder)
 * never served stale: every frame is byte for byte a fresh JSON.stringify of
 * the same request, across what changes a request between turns as the
 * agent makes them (Prompt, CacheWindow): the history window growing,
 * sliding and re-anchoring, history replaced by a compaction or emptied by
 * a forget, soul and summary edited, the tool list changing, tool rounds
 * growing the messages, a compaction request between two turns, and a
 * request that could not be assembled.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import fc from "fast-check"
import { type Message, type MessagesRequest, systemText } from "../../src/ports/Brain.js"
import { anchoredWindow, linesToRead } from "../../src/agent/CacheWindow.js"
import type { ToolDefinition } from "../../src/ports/Claws.js"
import { encodeBrainFrame, makeRequestFrameEncoder } from "../../src/pipes/BrainFrame.js"
import type { HistoryEntry } from "../../src/memory/Memory.js"
import { compactionRequest, promptMemo } from "../../src/agent/Prompt.js"

const fresh = (request: unknown) => `${JSON.stringify(request)}\n\n`

const tool = (name: string, description: string): ToolDefinition => ({
  name,
  description,
  input_schema: { type: "object", properties: { text: { type: "string", description: `${name} "input" 🦀` } } }
})

type Step =
  | { readonly _tag: "turn"; readonly toolRounds: number }
  | { readonly _tag: "compact" }
  | { readonly _tag: "forget" }
  | { readonly _tag: "soul"; readonly soul: string }
  | { readonly _tag: "tools"; readonly pick: ReadonlyArray<number> }
  | { readonly _tag: "redeclare" }

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ _tag: fc.constant("turn" as const), toolRounds: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.constant({ _tag: "compact" as const }) },
  { weight: 1, arbitrary: fc.constant({ _tag: "forget" as const }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("soul" as const), soul: fc.string({ maxLength: 20 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({ _tag: fc.constant("tools" as const), pick: fc.uniqueArray(fc.nat(3), { maxLength: 4 }) })
  },
  { weight: 1, arbitrary: fc.constant({ _tag: "redeclare" as const }) }
)

/**
 * An agent's requests, as Turn and the compaction make them, through one
 * encoder; each frame checked against a fresh encoding of its request.
 */
const replay = (steps: ReadonlyArray<Step>, keep: number, cache: boolean) => {
  const encode = makeRequestFrameEncoder()
  // One agent's memo, as Agent.make gives its turns.
  const { conversation, systemPrompt, toolSpecs: specs, turnRequest } = promptMemo()
  const check = (request: MessagesRequest) => expect(Result.getOrThrow(encode(request))).toBe(fresh(request))
  let declared = [0, 1, 2, 3].map((i) => tool(`tool${i}`, `does ${i}`))
  let tools: ReadonlyArray<ToolDefinition> = declared.slice(0, 2)
  let history: Array<HistoryEntry> = []
  let soul = "You are \"helpful\".\n\u2028"
  let summary = ""
  let anchor: HistoryEntry | undefined
  let n = 0
  for (const s of steps) {
    n++
    switch (s._tag) {
      case "turn": {
        const tail = history.slice(-(cache ? linesToRead(keep) : keep))
        const window = cache ? anchoredWindow(tail, keep, anchor) : { history: tail, anchor }
        anchor = window.anchor
        const text = `message ${n} ${"é".repeat(n % 5)}`
        const messages: Array<Message> = conversation(window.history, text, cache)
        const system = systemPrompt(soul, summary)
        const request = () =>
          turnRequest({ model: "m", maxTokens: 64, system, messages, tools, cache, specs: specs(tools, cache) })
        // The request itself is not stale either: the system prompt block is remade when soul or summary change.
        expect(systemText(request().system)).toBe(system)
        check(request())
        for (let round = 0; round < s.toolRounds; round++) {
          messages.push({ role: "assistant", content: [{ type: "tool_use", id: `t${n}.${round}`, name: "tool0", input: {} }] })
          messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `t${n}.${round}`, content: `r${round}` }] })
          check(request())
        }
        history.push({ role: "user", content: text }, { role: "assistant", content: `reply ${n}` })
        break
      }
      case "compact": {
        // The fold's request goes through the same brain, then history is
        // the kept lines as new entries, and the summary changes.
        check(compactionRequest("m", summary, history.map((entry) => `${entry.role}: ${entry.content}`)))
        summary = `summary after ${n}`
        history = history.slice(-keep).map((entry) => ({ role: entry.role, content: `${entry.content} (kept)` }))
        break
      }
      case "forget":
        history = []
        summary = ""
        break
      case "soul":
        soul = s.soul
        break
      case "tools":
        tools = s.pick.map((i) => declared[i]!)
        break
      case "redeclare":
        // A claw edited: same name, new declaration object and text.
        declared = declared.map((t) => tool(t.name, `${t.description} (edited ${n})`))
        tools = tools.map((t) => declared.find((d) => d.name === t.name)!)
        break
    }
  }
}

describe("request frames from kept JSON, as the agent's requests change", () => {
  it("are a fresh encoding of each request over turns, compactions, forgets, soul, summary and tool changes", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), fc.integer({ min: 1, max: 6 }), fc.boolean(),
        (steps, keep, cache) => replay(steps, keep, cache)),
      { numRuns: 200 }
    )
  })

  it("are a fresh encoding when the window re-anchors and after a compaction replaces history with other lines", () => {
    const steps: Array<Step> = [
      ...Array.from({ length: 12 }, (): Step => ({ _tag: "turn", toolRounds: 0 })),
      { _tag: "compact" },
      { _tag: "turn", toolRounds: 1 },
      { _tag: "soul", soul: "edited soul" },
      { _tag: "turn", toolRounds: 0 },
      { _tag: "tools", pick: [3, 0] },
      { _tag: "turn", toolRounds: 0 },
      { _tag: "redeclare" },
      { _tag: "turn", toolRounds: 0 },
      { _tag: "forget" },
      { _tag: "turn", toolRounds: 0 },
      { _tag: "turn", toolRounds: 2 }
    ]
    for (const cache of [true, false]) replay(steps, 3, cache)
  })

  it("never reuse the JSON of an element replaced, removed or reordered in the same array", () => {
    const encode = makeRequestFrameEncoder()
    const line = (content: string) => ({ role: "user", content })
    const messages = [line("a"), line("b"), line("c"), line("d")]
    const request = { model: "m", messages } as unknown as MessagesRequest
    const check = () => expect(Result.getOrThrow(encode(request))).toBe(fresh(request))
    check()
    messages[3] = line("d2")
    check()
    messages.length = 2
    check()
    messages.push(line("x"), line("y"))
    check()
    messages.reverse()
    check()
    messages.splice(1, 1)
    check()
    messages.unshift(messages[2]!)
    check()
    messages.length = 0
    check()
    messages.push(line("z"))
    check()
  })

  it("keep nothing half-made from a request that could not be assembled", () => {
    const encode = makeRequestFrameEncoder()
    const a = { role: "user", content: "a" }
    const b = { role: "assistant", content: "b" }
    const c = { role: "user", content: "c" }
    const first = { model: "m", messages: [a, b] } as unknown as MessagesRequest
    expect(Result.getOrThrow(encode(first))).toBe(fresh(first))
    // An element JSON cannot write, after a new one past the kept run.
    const broken = { model: "m", messages: [a, b, c, { role: "user", content: 1n }] } as unknown as MessagesRequest
    expect(encode(broken)).toEqual(encodeBrainFrame(broken))
    const next = { model: "m", messages: [a, b, c, b] } as unknown as MessagesRequest
    expect(Result.getOrThrow(encode(next))).toBe(fresh(next))
    // The messages assembled, then a later field fails: the frame is never made.
    const late = { model: "m", messages: [a, b, c, b, a], extra: 2n } as unknown as MessagesRequest
    expect(encode(late)).toEqual(encodeBrainFrame(late))
    const after = { model: "m", messages: [a, b, c, b, a, c] } as unknown as MessagesRequest
    expect(Result.getOrThrow(encode(after))).toBe(fresh(after))
    const shorter = { model: "m", messages: [b, c] } as unknown as MessagesRequest
    expect(Result.getOrThrow(encode(shorter))).toBe(fresh(shorter))
  })

  it("cut kept arrays at the right places when fields before them hold characters outside ASCII", () => {
    const encode = makeRequestFrameEncoder()
    const tools = [{ name: "t", description: "🦀\u2028\"" }]
    const lines = Array.from({ length: 6 }, (_, i) => ({ role: "user", content: `é${i}🦀"\\` }))
    for (let i = 0; i < 5; i++) {
      const request = {
        "k\"ey🦀": `v${i}`.repeat(i),
        tools,
        system: [{ type: "text", text: "s".repeat(i) }],
        messages: lines.slice(i % 3, i + 2)
      } as unknown as MessagesRequest
      expect(Result.getOrThrow(encode(request))).toBe(fresh(request))
    }
  })

  it("see a subclassed array or one with toJSON as JSON.stringify does", () => {
    const encode = makeRequestFrameEncoder()
    const line = { role: "user", content: "a" }
    const plain = { model: "m", messages: [line] } as unknown as MessagesRequest
    expect(Result.getOrThrow(encode(plain))).toBe(fresh(plain))
    const withToJson = Object.assign([line], { toJSON: () => ["other"] })
    const custom = { model: "m", messages: withToJson } as unknown as MessagesRequest
    expect(Result.getOrThrow(encode(custom))).toBe(fresh(custom))
    expect(Result.getOrThrow(encode(plain))).toBe(fresh(plain))
  })
})
