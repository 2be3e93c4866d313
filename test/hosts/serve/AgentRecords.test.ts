/** What the host reads of an agent's files: today's usage from the ledger's end, a period's, soul and summary, history pages. */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { Effect, Result } from "effect"
import * as AgentRecords from "../../../src/hosts/serve/AgentRecords.js"
import * as AgentStatus from "../../../src/hosts/serve/AgentStatus.js"
import * as FallbackSoul from "../../../src/memory/FallbackSoul.js"
import { tempDir } from "./Kit.js"

const line = (at: string, input: number) =>
  JSON.stringify({ at, kind: "turn", brain: "anthropic", model: "claude-haiku-4-5-20251001", ms: 1, input, output: 1, cache_write: 0, cache_read: 0 })

const PRICES = { "claude-haiku-4-5": { input: 1, output: 5, cache_write: 1.25, cache_read: 0.1 } }

describe("AgentRecords", () => {
  it("today's usage counts today's lines only, skipping a torn one; a period keeps its days, both ends included", () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "usage.jsonl"), [
      line("2026-01-01T10:00:00.000Z", 1000),
      line("2026-01-02T23:59:59.000Z", 200),
      "{\"at\":\"2026-01-03T0", // torn by a crash
      line("2026-01-03T00:00:01.000Z", 30),
      line("2026-01-03T12:00:00.000Z", 4)
    ].join("\n") + "\n")
    expect(AgentStatus.todayOf(dir, PRICES, new Date("2026-01-03T18:00:00Z"))).toEqual({ tokens: 30 + 4 + 2, cost: (34 * 1 + 2 * 5) / 1_000_000 })
    expect(AgentStatus.todayOf(dir, PRICES, new Date("2026-01-04T00:00:00Z")).tokens).toBe(0)
    const period = Result.getOrThrow(AgentRecords.usageOf(dir, PRICES, { since: "2026-01-02", until: "2026-01-02" }))
    expect([period.rows.map((row) => [row.day, row.input]), period.skipped]).toEqual([[["2026-01-02", 200]], 1])
    // A model without a price: no cost rather than 0.
    fs.writeFileSync(path.join(dir, "usage.jsonl"), line("2026-01-03T01:00:00.000Z", 5).replace("claude-haiku-4-5-20251001", "mystery") + "\n")
    expect(AgentStatus.todayOf(dir, PRICES, new Date("2026-01-03T02:00:00Z"))).toEqual({ tokens: 6, cost: null })
  })

  it("a period's usage is read from the ledger's end back to its first day: months of older lines, over what one read can hold, are not read", () => {
    const dir = tempDir()
    const file = path.join(dir, "usage.jsonl")
    // 540 MB before the period (a sparse file: no disk): more than one string can hold, as a busy agent's ledger grows to.
    fs.writeFileSync(file, "")
    fs.truncateSync(file, 540_000_000)
    fs.appendFileSync(file, "\n" + [line("2026-01-01T10:00:00.000Z", 1000), line("2026-03-02T08:00:00.000Z", 7), line("2026-03-03T08:00:00.000Z", 9)].join("\n") + "\n")
    try {
      const period = Result.getOrThrow(AgentRecords.usageOf(dir, PRICES, { since: "2026-03-02", until: "2026-03-02" }))
      expect([period.rows.map((row) => [row.day, row.input]), period.skipped]).toEqual([[["2026-03-02", 7]], 0])
      const all = Effect.runSync(AgentRecords.usageOfAll(["one"], () => dir, PRICES, { since: "2026-03-01" }))
      expect(all.rows.map((row) => [row.agent, row.day, row.input])).toEqual([["one", "2026-03-02", 7], ["one", "2026-03-03", 9]])
    } finally {
      fs.rmSync(file)
    }
  })

  it("the soul is the agent's own, else the host's as its turns read it, else the built-in one; the summary as it is", () => {
    const dir = tempDir()
    const hostSoulFile = path.join(dir, "host-soul.md")
    const hostSoul = FallbackSoul.reader(hostSoulFile)
    const agent = path.join(dir, "agent")
    fs.mkdirSync(agent)
    expect(Result.getOrThrow(AgentRecords.memoryOf(agent, hostSoul))).toEqual({ soul: "You are a helpful personal assistant.", summary: "" })
    fs.writeFileSync(hostSoulFile, "You are the host's.")
    expect(Result.getOrThrow(AgentRecords.memoryOf(agent, hostSoul)).soul).toBe("You are the host's.")
    // Past its limit the turns fail on it, and so does this reading: never a soul the agent does not speak with.
    fs.writeFileSync(hostSoulFile, "x".repeat(300 * 1024))
    const refused = AgentRecords.memoryOf(agent, hostSoul)
    expect(Result.isFailure(refused) && refused.failure).toMatch(/host-soul\.md.*256 KiB/)
    fs.writeFileSync(path.join(agent, "soul.md"), "You are Ada.")
    fs.writeFileSync(path.join(agent, "summary.md"), "We met.")
    expect(Result.getOrThrow(AgentRecords.memoryOf(agent, hostSoul))).toEqual({ soul: "You are Ada.", summary: "We met." })
  })

  it("history pages skip lines that do not decode, and a before past the end counts from the end", () => {
    const dir = tempDir()
    const lines = [
      JSON.stringify({ role: "user", content: "one" }),
      "not json",
      JSON.stringify({ role: "assistant", content: "two" }),
      JSON.stringify({ role: "user", content: "three" })
    ]
    fs.writeFileSync(path.join(dir, "history.jsonl"), lines.join("\n") + "\n")
    const page = Result.getOrThrow(AgentRecords.historyPage(dir, 1_000_000, 2))
    expect(page.entries.map((entry) => entry.content)).toEqual(["three", "two"])
    const rest = Result.getOrThrow(AgentRecords.historyPage(dir, page.next!, 2))
    expect([rest.entries.map((entry) => [entry.at, entry.content]), rest.next]).toEqual([[[0, "one"]], null])
    expect(Result.getOrThrow(AgentRecords.historyPage(path.join(dir, "none"), undefined, 5))).toEqual({ entries: [], next: null })
  })

  it("a history cursor inside a line is refused as a bad query, naming it; one at a line's start, 0 or the end is a page", () => {
    const dir = tempDir()
    const lines = [JSON.stringify({ role: "user", content: "one" }), JSON.stringify({ role: "assistant", content: "two" })]
    fs.writeFileSync(path.join(dir, "history.jsonl"), lines.join("\n") + "\n")
    const second = lines[0]!.length + 1
    const size = second + lines[1]!.length + 1
    for (const inside of [1, second - 1, second + 5, size - 1]) {
      const refused = AgentRecords.historyPage(dir, inside, 5)
      expect(Result.isFailure(refused) && refused.failure).toEqual({
        reason: "bad-query",
        message: expect.stringContaining(`before=${inside} does not point at the start of a line`)
      })
    }
    const contents = (before: number) => Result.getOrThrow(AgentRecords.historyPage(dir, before, 5)).entries.map((entry) => entry.content)
    expect([contents(0), contents(second), contents(size), contents(size + 100)]).toEqual([[], ["one"], ["two", "one"], ["two", "one"]])
  })
})
