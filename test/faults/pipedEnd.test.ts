/**
 * Faults in how a piped run ends: it must finish what this run's messages
 * started (a recovered message, a due compaction, however slow) and answer
 * every line it read, not stop after counting as many replies as lines.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  delay,
  echo,
  type Handler,
  isCompaction,
  listingSummary,
  make as brainServer
} from "../support/AnthropicServer.js"
import { line } from "../support/Harness.js"
import { sandbox } from "./Campaign.js"
import { planckclawToEnd } from "./Processes.js"

const slowSummaries: Handler = (request, index) =>
  isCompaction(request) ? delay(1500, listingSummary(request)) : echo(request, index)

const historyOf = (lines: ReadonlyArray<string>) =>
  lines.map((text) => line("user", text) + line("assistant", `re: ${text}`)).join("")

describe("faults: how a piped run ends", () => {
  it.live("compaction: the last piped message makes history too long → the summary is written before exit (issue 17 repro)", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const env = box.envWith({ ANTHROPIC_BASE_URL: server.url })
      const first = yield* planckclawToEnd(box, ["run"], env, "first\nsecond\nthird\n")
      expect(first.code).toBe(0)
      expect(box.memoryFile("history.jsonl")).toBe(historyOf(["first", "second", "third"]))

      const last = yield* planckclawToEnd(box, ["run"], { ...env, HISTORY_MAX: "6", HISTORY_KEEP: "2" }, "fourth\n")
      expect(last.code).toBe(0)
      expect(last.stdout).toBe("re: fourth\n")
      expect(box.memoryFile("history.jsonl")).toBe(historyOf(["fourth"]))
      const summary = box.memoryFile("summary.md") ?? ""
      for (const text of ["first", "second", "third"]) expect(summary).toContain(text)
      expect(summary).not.toContain("fourth")
    }))

  it.live("compaction: a slow summary after many piped messages → waited for, written, then exit 0", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({ HISTORY_MAX: "4", HISTORY_KEEP: "2" })
      const server = yield* brainServer(slowSummaries)
      const result = yield* planckclawToEnd(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), "a\nb\nc\n")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("re: a\nre: b\nre: c\n")
      const compactions = (yield* server.requests).filter(isCompaction)
      expect(compactions).toHaveLength(1)
      expect(box.memoryFile("history.jsonl")).toBe(historyOf(["c"]))
      expect(box.memoryFile("summary.md")).toContain("a")
      expect(box.memoryFile(".inbox.jsonl") ?? "").toBe("")
    }))

  it.live("recovery: one message left in the journal, two piped → all three answered, none left over (issue 9.1)", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      box.writeMemory(".inbox.jsonl", `${JSON.stringify({ accepted: 7, channel: "cli", text: "old" })}\n`)
      const server = yield* brainServer(echo)
      const env = box.envWith({ ANTHROPIC_BASE_URL: server.url })
      const result = yield* planckclawToEnd(box, ["run"], env, "one\ntwo\n")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("re: old\nre: one\nre: two\n")
      expect(box.memoryFile("history.jsonl")).toBe(historyOf(["old", "one", "two"]))
      expect(box.memoryFile(".inbox.jsonl") ?? "").toBe("")

      // No gap carried over: the next run answers exactly its own lines.
      const next = yield* planckclawToEnd(box, ["run"], env, "three\nfour\n")
      expect(next.stdout).toBe("re: three\nre: four\n")
      expect(box.memoryFile("history.jsonl")).toBe(historyOf(["old", "one", "two", "three", "four"]))
    }))

  it.live("recovery: one message left in the journal and empty stdin → it is answered before exit", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      box.writeMemory(".inbox.jsonl", `${JSON.stringify({ accepted: 3, channel: "cli", text: "left over" })}\n`)
      const server = yield* brainServer(echo)
      const result = yield* planckclawToEnd(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), "")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("re: left over\n")
      expect(box.memoryFile("history.jsonl")).toBe(historyOf(["left over"]))
      expect(box.memoryFile(".inbox.jsonl") ?? "").toBe("")
    }))

  it.live("empty stdin and nothing recovered → exits 0 at once, nothing asked of the brain", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const result = yield* planckclawToEnd(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), "")
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("")
      expect(yield* server.requests).toHaveLength(0)
    }))
})
