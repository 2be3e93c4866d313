/**
 * The agent's request frames assembled from kept pieces (BrainFrame
 * makeRequestFrameEncoder): byte for byte what JSON.stringify writes, turn
 * after turn, with the same messages and tool specs resent and new ones
 * added, and the same errors for what JSON cannot hold.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import fc from "fast-check"
import type { MessagesRequest } from "../../src/ports/Brain.js"
import type { ToolDefinition } from "../../src/ports/Claws.js"
import { encodeBrainFrame, makeRequestFrameEncoder } from "../../src/pipes/BrainFrame.js"
import { promptMemo } from "../../src/agent/Prompt.js"

const expected = (request: unknown) => `${JSON.stringify(request)}\n\n`

const tools: ReadonlyArray<ToolDefinition> = [
  { name: "time", description: "What time it is", input_schema: { type: "object" as const, properties: {} } },
  { name: "echo", description: "Says \"it\" back\n\u2028", input_schema: { type: "object" as const, properties: { text: { type: "string" } } } }
]

describe("request frames from kept pieces", () => {
  it("are the bytes of JSON.stringify over turns that resend the same history and tool specs", () => {
    for (const cache of [false, true]) {
      const encode = makeRequestFrameEncoder()
      const { conversation, toolSpecs: specs, turnRequest } = promptMemo()
      const history: Array<{ role: "user" | "assistant"; content: string }> = []
      for (let turn = 0; turn < 6; turn++) {
        const text = `message ${turn} with "quotes", \\ and émoji 🦀`
        const messages = conversation(history, text, cache)
        const request = turnRequest({
          model: "m",
          maxTokens: 64,
          system: turn < 3 ? "soul" : "soul\n---\nCONVERSATION SUMMARY:\nsummary",
          messages,
          tools,
          cache,
          specs: specs(tools, cache)
        })
        expect(Result.getOrThrow(encode(request))).toBe(expected(request))
        // A tool round grows the same messages array; the next request must see it.
        messages.push({ role: "assistant", content: [{ type: "tool_use", id: `t${turn}`, name: "time", input: {} }] })
        messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `t${turn}`, content: "noon" }] })
        expect(Result.getOrThrow(encode(request))).toBe(expected(request))
        history.push({ role: "user", content: text }, { role: "assistant", content: `reply ${turn}` })
      }
    }
  })

  it("write fields the schema does not know, and leave out what JSON leaves out, as JSON.stringify does", () => {
    const encode = makeRequestFrameEncoder()
    const request = {
      model: "m",
      max_tokens: 5,
      temperature: 0.2,
      stop_sequences: ["a", undefined, null, 3],
      metadata: { user_id: "u" },
      tool_choice: undefined,
      messages: [{ role: "user", content: "hi", extra: undefined }, null, 7]
    } as unknown as MessagesRequest
    expect(Result.getOrThrow(encode(request))).toBe(expected(request))
    expect(Result.getOrThrow(encode(request))).toBe(expected(request))
  })

  it("take the whole encoding for values with toJSON, and fail as it does on what JSON cannot hold", () => {
    const encode = makeRequestFrameEncoder()
    const dated = { model: "m", max_tokens: 1, when: new Date(0), messages: [{ toJSON: () => "custom" }] }
    expect(Result.getOrThrow(encode(dated as unknown as MessagesRequest))).toBe(expected(dated))
    const big = { model: "m", max_tokens: 1, messages: [{ role: "user", content: 1n }] } as unknown as MessagesRequest
    const failed = encode(big)
    expect(Result.isFailure(failed)).toBe(true)
    expect(failed).toEqual(encodeBrainFrame(big))
  })

  it("match JSON.stringify for any JSON data, encoded twice with one encoder", () => {
    const encode = makeRequestFrameEncoder()
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.array(fc.jsonValue()), (fields, messages) => {
        const request = { ...fields, messages } as unknown as MessagesRequest
        expect(Result.getOrThrow(encode(request))).toBe(expected(request))
        expect(Result.getOrThrow(encode(request))).toBe(expected(request))
      })
    )
  })

  it("match JSON.stringify for arrays that slide, grow, shrink, repeat or reorder the objects of the last request", () => {
    fc.assert(
      fc.property(
        fc.array(fc.dictionary(fc.string(), fc.jsonValue()), { minLength: 1, maxLength: 8 }),
        fc.array(fc.array(fc.oneof(fc.nat(7), fc.constantFrom("text", 3, null, undefined)), { maxLength: 12 }), {
          minLength: 1,
          maxLength: 8
        }),
        (pool, steps) => {
          const encode = makeRequestFrameEncoder()
          for (const step of steps) {
            const messages = step.map((pick) => (typeof pick === "number" ? pool[pick % pool.length] : pick))
            const request = { model: "m", messages } as unknown as MessagesRequest
            expect(Result.getOrThrow(encode(request))).toBe(expected(request))
          }
        }
      )
    )
  })

  it("see an element replaced in place, and the window slide by a turn, as the next request holds them", () => {
    const encode = makeRequestFrameEncoder()
    const lines = Array.from({ length: 10 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `line ${i}` }))
    const request = (messages: Array<unknown>) => ({ model: "m", messages }) as unknown as MessagesRequest
    const first = lines.slice(0, 6)
    expect(Result.getOrThrow(encode(request(first)))).toBe(expected(request(first)))
    // The same array, one element replaced by another object: no stale JSON.
    first[3] = { role: "assistant", content: "replaced" }
    expect(Result.getOrThrow(encode(request(first)))).toBe(expected(request(first)))
    const slid = [...lines.slice(2, 8), { role: "user", content: "new" }]
    expect(Result.getOrThrow(encode(request(slid)))).toBe(expected(request(slid)))
    const reanchored = lines.slice(7)
    expect(Result.getOrThrow(encode(request(reanchored)))).toBe(expected(request(reanchored)))
  })
})
