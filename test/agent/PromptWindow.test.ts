/**
 * An agent's `conversation` (Prompt.promptMemo) finds the lines of a window
 * that slides, grows, jumps or alternates with another by position in the
 * last one: the messages are always those of the lines given, as a fresh build
 * makes them, and the same message objects for the same entries.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import type { HistoryEntry } from "../../src/memory/Memory.js"
import { capText, promptMemo } from "../../src/agent/Prompt.js"

const fresh = (history: ReadonlyArray<HistoryEntry>, text: string, cache: boolean) => {
  const start = history[0]?.role === "assistant" ? 1 : 0
  const lines = history.slice(start).map((entry, i, all) =>
    !cache
      ? { role: entry.role, content: capText(entry.content) }
      : {
        role: entry.role,
        content: [{ type: "text", text: capText(entry.content), ...(i === all.length - 1 ? { cache_control: { type: "ephemeral" } } : {}) }]
      }
  )
  return [...lines, { role: "user", content: text }]
}

describe("conversation over moving windows", () => {
  it("makes the messages of the lines given, whatever the last window was", () => {
    const { conversation } = promptMemo()
    const pool: Array<HistoryEntry> = Array.from({ length: 30 }, (_, i) => ({
      role: i % 2 === 0 ? "user" : "assistant",
      content: `line ${i}`
    }))
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(29), fc.nat(12), fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 12 }),
        (windows) => {
          for (const [from, length, cache, reversed] of windows) {
            const slice = pool.slice(from, from + length)
            const history = reversed ? [...slice].reverse() : slice
            expect(JSON.stringify(conversation(history, "q", cache))).toBe(JSON.stringify(fresh(history, "q", cache)))
          }
        }
      )
    )
  })

  it("hands out the same message object for an entry as the window slides and another window comes between", () => {
    const { conversation } = promptMemo()
    const lines = (name: string) =>
      Array.from({ length: 12 }, (_, i): HistoryEntry => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${name} ${i}` }))
    const mine = lines("mine")
    const other = lines("other")
    const first = conversation(mine.slice(0, 8), "q", false)
    conversation(other.slice(0, 8), "q", false)
    const slid = conversation(mine.slice(2, 10), "q", false)
    // mine[2..6] were the 3rd to 7th messages then, and are the 1st to 5th now.
    for (let i = 0; i < 5; i++) expect(slid[i]).toBe(first[i + 2])
    expect(slid.map((message) => message.content)).toEqual([...mine.slice(2, 10).map((entry) => entry.content), "q"])
  })
})
