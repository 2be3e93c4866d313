/**
 * What the prompt builder remembers between turns, and that it changes no
 * byte: Prompt.toolSpecsMemo (the tool specs come from the last catalogue
 * while its tools are the same objects, and are made again, exactly as
 * toolSpecs makes them, as soon as any tool or the cache flag changes), and
 * the history lines `conversation` makes once per entry; each agent's memo
 * (Prompt.promptMemo) its own.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ToolDefinition } from "../../src/ports/Claws.js"
import type { HistoryEntry } from "../../src/memory/Memory.js"
import { capText, promptMemo, toolSpecs, toolSpecsMemo } from "../../src/agent/Prompt.js"

const tool = (name: string, description = name): ToolDefinition => ({
  name,
  description,
  input_schema: { type: "object", properties: {} }
})

describe("toolSpecsMemo", () => {
  it("reuses the specs while every tool is the same object, in a new array or not", () => {
    const memo = toolSpecsMemo()
    const b = tool("b")
    const a = tool("a")
    const first = memo([b, a], true)
    expect(first).toEqual(toolSpecs([b, a], true))
    expect(memo([b, a], true)).toBe(first)
  })

  it("makes them again when a tool changed, was added or removed, or the cache flag changed", () => {
    const memo = toolSpecsMemo()
    const a = tool("a")
    const b = tool("b")
    memo([a, b], true)
    const edited = tool("b", "edited")
    expect(memo([a, edited], true)).toEqual(toolSpecs([a, edited], true))
    expect(memo([a, edited, tool("c")], true)).toEqual(toolSpecs([a, edited, tool("c")], true))
    expect(memo([a], true)).toEqual(toolSpecs([a], true))
    expect(memo([a], false)).toEqual(toolSpecs([a], false))
    expect(memo([], false)).toEqual([])
  })
})

describe("conversation", () => {
  const user = (content: string): HistoryEntry => ({ role: "user", content })
  const assistant = (content: string): HistoryEntry => ({ role: "assistant", content })
  const block = (text: string, breakpoint = false) => ({
    type: "text",
    text,
    ...(breakpoint ? { cache_control: { type: "ephemeral" } } : {})
  })

  it("moves the breakpoint to the new last line when the same entries come again with more", () => {
    const { conversation } = promptMemo()
    const [u1, a1, u2, a2] = [user("u1"), assistant("a1"), user("u2"), assistant("a2")]
    expect(conversation([u1, a1], "q1", true)).toEqual([
      { role: "user", content: [block("u1")] },
      { role: "assistant", content: [block("a1", true)] },
      { role: "user", content: "q1" }
    ])
    const next = conversation([u1, a1, u2, a2], "q2", true)
    expect(JSON.stringify(next)).toBe(JSON.stringify([
      { role: "user", content: [block("u1")] },
      { role: "assistant", content: [block("a1")] },
      { role: "user", content: [block("u2")] },
      { role: "assistant", content: [block("a2", true)] },
      { role: "user", content: "q2" }
    ]))
  })

  it("gives the same entries in the form the cache flag asks for, cut as capText cuts them", () => {
    const { conversation } = promptMemo()
    const long = user("x".repeat(20_000))
    const a1 = assistant("a1")
    const cached = conversation([long, a1], "q", true)
    const plain = conversation([long, a1], "q", false)
    expect(plain[0]).toEqual({ role: "user", content: capText("x".repeat(20_000)) })
    expect(plain[1]).toEqual({ role: "assistant", content: "a1" })
    expect(cached[0]).toEqual({ role: "user", content: [block(capText("x".repeat(20_000)))] })
    expect(conversation([long, a1], "q", false)).toEqual(plain)
    expect(conversation([assistant("dropped"), a1], "q", false)).toEqual([{ role: "assistant", content: "a1" }, { role: "user", content: "q" }])
  })
})

describe("systemPrompt", () => {
  it("follows every change of soul or summary, whatever it made last", () => {
    const { systemPrompt } = promptMemo()
    expect(systemPrompt("Soul.", "Sum 1.")).toBe("Soul.\n---\nCONVERSATION SUMMARY:\nSum 1.")
    expect(systemPrompt("Soul.", "Sum 1.")).toBe("Soul.\n---\nCONVERSATION SUMMARY:\nSum 1.")
    expect(systemPrompt("Soul.", "Sum 2.")).toBe("Soul.\n---\nCONVERSATION SUMMARY:\nSum 2.")
    expect(systemPrompt("Other soul.", "Sum 2.")).toBe("Other soul.\n---\nCONVERSATION SUMMARY:\nSum 2.")
    expect(systemPrompt("Other soul.", "")).toBe("Other soul.")
    expect(systemPrompt("Soul.", "Sum 1.")).toBe("Soul.\n---\nCONVERSATION SUMMARY:\nSum 1.")
  })
})

describe("promptMemo", () => {
  it("is one agent's: another agent's turns keep none of its pieces from being handed out again", () => {
    const mine = promptMemo()
    const other = promptMemo()
    const request = (memo: typeof mine, system: string, history: ReadonlyArray<HistoryEntry>) =>
      memo.turnRequest({
        model: "m",
        maxTokens: 64,
        system: memo.systemPrompt(system, ""),
        messages: memo.conversation(history, "q", true),
        tools: [],
        cache: true
      })
    const lines = (name: string): Array<HistoryEntry> =>
      Array.from({ length: 4 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${name} ${i}` }))
    const history = lines("mine")
    const first = request(mine, "My soul.", history)
    request(other, "Its soul.", lines("other"))
    const again = request(mine, "My soul.", history)
    // The same block and line objects: the frame encoder reuses their JSON.
    expect(again.system).toBe(first.system)
    expect(again.messages[0]).toBe(first.messages[0])
    expect(request(other, "Its soul.", [])).toEqual({
      model: "m",
      max_tokens: 64,
      system: [{ type: "text", text: "Its soul.", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: "q" }]
    })
  })
})
