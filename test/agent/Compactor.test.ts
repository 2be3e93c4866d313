import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BrainError } from "../../src/ports/Brain.js"
import { text } from "../../src/brain/ScriptedBrain.js"
import { COMPACTION_SYSTEM } from "../../src/agent/Prompt.js"
import { PROMPT_FILE_MAX_BYTES } from "../../src/memory/PromptFiles.js"
import { harness, line } from "../support/Harness.js"

const compactionRequest = (summary: string, lines: ReadonlyArray<string>) => ({
  model: "test-model",
  max_tokens: 2048,
  system: COMPACTION_SYSTEM,
  messages: [{
    role: "user",
    content: `EXISTING SUMMARY:\n${summary}\n\nCONVERSATION TO SUMMARIZE:\n${lines.map((l) => l.trimEnd()).join("\n")}`
  }]
})

describe("Compaction", () => {
  it.effect("folds the lines before the kept tail into summary.md after the turn that crossed HISTORY_MAX", () =>
    Effect.gen(function*() {
      const old = [line("user", "u1"), line("assistant", "a1"), line("user", "u2"), line("assistant", "a2")]
      const h = yield* harness({
        settings: { HISTORY_MAX: "4", HISTORY_KEEP: "2", PLANCKCLAW_PROMPT_CACHE: "0" },
        history: old.join(""),
        script: [text("a3"), text("Marc likes dice."), text("a4"), text("a5"), text("Marc likes dice and time.")]
      })
      expect((yield* h.say("u3")).text).toBe("a3")
      // The reply goes out first; the compaction runs in the background (the next message need not wait for it).
      yield* h.settled
      yield* h.say("u4")
      const afterSummary = yield* h.requests
      expect(afterSummary[1]).toEqual(compactionRequest("", old))
      // The turn after the compaction sees the summary in its system prompt.
      expect(afterSummary[2]!.system).toBe("You are a helpful personal assistant.\n---\nCONVERSATION SUMMARY:\nMarc likes dice.")
      expect(h.read("history.jsonl")).toBe(
        line("user", "u3") + line("assistant", "a3") + line("user", "u4") + line("assistant", "a4")
      )

      // Crossing again folds with the existing summary.
      yield* h.say("u5")
      yield* h.finish
      const again = yield* h.requests
      expect(again[4]).toEqual(
        compactionRequest("Marc likes dice.", [
          line("user", "u3"),
          line("assistant", "a3"),
          line("user", "u4"),
          line("assistant", "a4")
        ])
      )
      expect(h.read("summary.md")).toBe("Marc likes dice and time.\n")
      expect(h.read("history.jsonl")).toBe(line("user", "u5") + line("assistant", "a5"))
    }))

  it.effect("folds a large backlog in several requests, each carrying the summary so far", () =>
    Effect.gen(function*() {
      const old = Array.from({ length: 6 }, (_, i) => line(i % 2 === 0 ? "user" : "assistant", `m${i}`))
      const h = yield* harness({
        settings: { HISTORY_MAX: "6", HISTORY_KEEP: "2", PLANCKCLAW_COMPACTION_CHUNK: "60" },
        history: old.join(""),
        script: [text("reply"), text("S1"), text("S2"), text("S3")]
      })
      yield* h.say("new")
      yield* h.finish
      const requests = yield* h.requests
      // Each history line is 33 characters: two make a chunk of 60 or more.
      expect(requests.slice(1)).toEqual([
        compactionRequest("", old.slice(0, 2)),
        compactionRequest("S1", old.slice(2, 4)),
        compactionRequest("S2", old.slice(4, 6))
      ])
      expect(h.read("summary.md")).toBe("S3\n")
      expect(h.read("history.jsonl")).toBe(line("user", "new") + line("assistant", "reply"))
    }))

  it.effect("folds a backlog above a mebibyte read in blocks, not whole: every line once, in order", () =>
    Effect.gen(function*() {
      // About 1.1 MB before the kept tail: past the size a fold reads in one go.
      const old = Array.from({ length: 2600 }, (_, i) => line(i % 2 === 0 ? "user" : "assistant", `m${i} ${"x".repeat(400)}`))
      const h = yield* harness({
        settings: { HISTORY_MAX: "6", HISTORY_KEEP: "2", PLANCKCLAW_COMPACTION_CHUNK: "300000" },
        history: old.join(""),
        script: [text("reply"), text("S1"), text("S2"), text("S3"), text("S4")]
      })
      yield* h.say("new")
      yield* h.finish
      const requests = (yield* h.requests).slice(1)
      const sent = requests.flatMap((request) => {
        const content = request.messages[0]?.content
        return typeof content === "string" ? content.split("CONVERSATION TO SUMMARIZE:\n")[1]!.split("\n") : []
      })
      expect(requests).toHaveLength(4)
      expect(sent).toEqual(old.map((l) => l.trimEnd()))
      expect(h.read("summary.md")).toBe("S4\n")
      expect(h.read("history.jsonl")).toBe(line("user", "new") + line("assistant", "reply"))
    }))

  it.effect("leaves memory untouched when the brain cannot summarise, and still answers", () =>
    Effect.gen(function*() {
      const old = [line("user", "u1"), line("assistant", "a1")]
      const h = yield* harness({
        settings: { HISTORY_MAX: "2", HISTORY_KEEP: "1" },
        summary: "before\n",
        history: old.join(""),
        script: [text("a2"), new BrainError({ reason: "timeout", detail: "test" })]
      })
      expect((yield* h.say("u2")).text).toBe("a2")
      yield* h.finish
      expect(yield* h.requests).toHaveLength(2)
      expect(h.read("summary.md")).toBe("before\n")
      expect(h.read("history.jsonl")).toBe(old.join("") + line("user", "u2") + line("assistant", "a2"))
    }))

  it.effect("drops undecodable lines from the folded part without sending them", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        settings: { HISTORY_MAX: "3", HISTORY_KEEP: "2" },
        history: line("user", "u1") + "garbage\n" + line("assistant", "a1"),
        script: [text("a2"), text("S")]
      })
      yield* h.say("u2")
      yield* h.finish
      const requests = yield* h.requests
      expect(requests[1]).toEqual(compactionRequest("", [line("user", "u1"), line("assistant", "a1")]))
      expect(h.read("history.jsonl")).toBe(line("user", "u2") + line("assistant", "a2"))
    }))

  it.effect("refuses a summary that would make summary.md larger than its limit: memory unchanged, /compact says so", () =>
    Effect.gen(function*() {
      const old = [line("user", "u1"), line("assistant", "a1"), line("user", "u2"), line("assistant", "a2")].join("")
      // Counted in UTF-8 bytes, as the limit is: half as many characters, each of two bytes, and the newline.
      const oversized = "é".repeat(PROMPT_FILE_MAX_BYTES / 2)
      const atTheLimit = "S".repeat(PROMPT_FILE_MAX_BYTES - 1)
      const h = yield* harness({
        settings: { HISTORY_MAX: "100", HISTORY_KEEP: "2", PLANCKCLAW_PROMPT_CACHE: "0" },
        summary: "before\n",
        history: old,
        script: [text(oversized), text("a3"), text(atTheLimit), text("a4")]
      })
      expect((yield* h.say("/compact")).text).toBe(
        `Compaction failed: the brain's summary would make summary.md ${PROMPT_FILE_MAX_BYTES + 1} bytes, ` +
          `over its limit of ${PROMPT_FILE_MAX_BYTES} bytes (256 KiB). History is intact.`
      )
      expect(h.read("summary.md")).toBe("before\n")
      expect(h.read("history.jsonl")).toBe(old)
      // The next turn is answered with the summary as it was.
      expect((yield* h.say("u3")).text).toBe("a3")
      expect((yield* h.requests)[1]!.system).toContain("CONVERSATION SUMMARY:\nbefore")

      // A summary that fits exactly is committed, and the next turn carries it.
      expect((yield* h.say("/compact")).text).toContain("Compacted: summarised 4 lines")
      expect(Buffer.byteLength(h.read("summary.md")!, "utf8")).toBe(PROMPT_FILE_MAX_BYTES)
      expect((yield* h.say("u4")).text).toBe("a4")
      expect((yield* h.requests)[3]!.system).toContain(atTheLimit)
      yield* h.finish
    }))
})
