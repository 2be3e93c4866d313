/**
 * The usage ledger: usage.jsonl after turns and a compaction (exact, under
 * the TestClock), a line torn by a crash skipped, and `planckclaw usage`
 * (the built command) summing it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import type { MessagesResponse } from "../../src/ports/Brain.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as UsageLedger from "../../src/usage/UsageLedger.js"
import * as Cli from "../support/Cli.js"
import { harness, line } from "../support/Harness.js"
import { captureLogs } from "../support/LogCapture.js"
import { sandbox, tempDir } from "../support/Sandbox.js"

const answer = (text: string, usage: MessagesResponse["usage"]): MessagesResponse => ({
  model: "claude-test",
  content: [{ type: "text", text }],
  stop_reason: "end_turn",
  usage
})

const at0 = "1970-01-01T00:00:00.000Z"

describe("usage.jsonl", () => {
  it.effect("gets one exact line per answer, turns and compactions told apart; a torn last line stays apart and is skipped", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        settings: { HISTORY_MAX: "4", HISTORY_KEEP: "2" },
        history: line("user", "u1") + line("assistant", "a1") + line("user", "u2") + line("assistant", "a2"),
        script: [
          answer("a3", { input_tokens: 10, output_tokens: 3, cache_creation_input_tokens: 200, cache_read_input_tokens: 0 }),
          answer("Summary.", { input_tokens: 50, output_tokens: 8 }),
          answer("a4", {})
        ]
      })
      // A crash mid-write left a torn line: the next answer's line starts on its own.
      const file = path.join(h.directory, "usage.jsonl")
      fs.writeFileSync(file, "{\"at\":\"1970-01-01T00:00:0")
      yield* h.say("u3")
      // The compaction runs in the background: its request comes before u4's once it is done.
      yield* h.settled
      yield* h.say("u4")
      yield* h.finish
      const lines = [
        { at: at0, kind: "turn", brain: "anthropic", model: "claude-test", ms: 0, input: 10, output: 3, cache_write: 200, cache_read: 0 },
        { at: at0, kind: "compaction", brain: "anthropic", model: "claude-test", ms: 0, input: 50, output: 8, cache_write: 0, cache_read: 0 },
        { at: at0, kind: "turn", brain: "anthropic", model: "claude-test", ms: 0, input: 0, output: 0, cache_write: 0, cache_read: 0 }
      ]
      expect(h.read("usage.jsonl")).toBe(
        `{"at":"1970-01-01T00:00:0\n${lines.map((entry) => `${JSON.stringify(entry)}\n`).join("")}`
      )
      const read = UsageLedger.read(file)
      expect(Result.getOrThrow(read)).toEqual({ lines, skipped: 1 })
    }))
})

describe("usage.jsonl held open between answers", () => {
  const entry = (input: number): UsageLedger.UsageLine =>
    ({ at: at0, kind: "turn", brain: "test", model: "m", ms: 0, input, output: 0, cache_write: 0, cache_read: 0 })
  const encoded = (...inputs: ReadonlyArray<number>) => inputs.map((input) => `${JSON.stringify(entry(input))}\n`).join("")

  // The one lstat(2) before each line: a file moved away or removed by hand is opened anew, not written behind the user's back.
  it.effect("follows the path: a file rotated or removed by hand gets no more lines, a new usage.jsonl does", () =>
    Effect.gen(function*() {
      const directory = yield* tempDir()
      const file = path.join(directory, "usage.jsonl")
      const rotated = path.join(directory, "usage-2025-05.jsonl")
      const ledger = yield* Effect.acquireRelease(Effect.sync(() => UsageLedger.heldAppender(file)), (held) => Effect.sync(held.close))
      expect(Result.isSuccess(ledger.append([entry(1)]))).toBe(true)
      fs.renameSync(file, rotated)
      expect(Result.isSuccess(ledger.append([entry(2)]))).toBe(true)
      expect(fs.readFileSync(rotated, "utf8")).toBe(encoded(1))
      expect(fs.readFileSync(file, "utf8")).toBe(encoded(2))
      fs.unlinkSync(file)
      expect(Result.isSuccess(ledger.append([entry(3)]))).toBe(true)
      expect(fs.readFileSync(file, "utf8")).toBe(encoded(3))
      // Another writer's line (a `planckclaw compact` beside the run) is kept whole, and ours follows it.
      fs.appendFileSync(file, encoded(4))
      expect(Result.isSuccess(ledger.append([entry(5)]))).toBe(true)
      expect(fs.readFileSync(file, "utf8")).toBe(encoded(3, 4, 5))
    }))
})

describe("usage.jsonl that cannot be written", () => {
  it.effect("is said once per outage, and its end, so a second outage months later is not silent", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const directory = yield* tempDir()
      const inside = path.join(directory, "memory")
      const scripted = yield* ScriptedBrain.make(Array.from({ length: 5 }, () => ScriptedBrain.text("ok")))
      const brain = yield* UsageLedger.recording(scripted.service, path.join(inside, "usage.jsonl"), "test")
      const ask = brain.complete({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).pipe(Effect.provide(logs.layer))
      const said = () => logs.lines.filter((entry) => entry.includes("usage ledger"))
      // No directory for it: the first answer is said, the second is not.
      yield* ask
      yield* ask
      expect(said()).toHaveLength(1)
      expect(said()[0]).toMatch(/^WARN usage ledger not written \(.*ENOENT.*\); turns go on without it \(logged once until it is written again\)$/)
      fs.mkdirSync(inside)
      yield* ask
      expect(said()[1]).toBe(`INFO usage ledger ${path.join(inside, "usage.jsonl")} is written again`)
      fs.rmSync(inside, { recursive: true })
      yield* ask
      yield* ask
      expect(said()).toHaveLength(3)
      expect(said()[2]).toMatch(/^WARN usage ledger not written/)
    }))
})

const ledger = [
  { at: "2025-06-01T10:00:00.000Z", kind: "turn", brain: "anthropic", model: "claude-haiku-4-5-20251001", ms: 900, input: 100, output: 50, cache_write: 2000, cache_read: 0 },
  { at: "2025-06-01T10:05:00.000Z", kind: "turn", brain: "anthropic", model: "claude-haiku-4-5-20251001", ms: 800, input: 120, output: 40, cache_write: 0, cache_read: 2000 },
  { at: "2025-06-01T23:59:59.000Z", kind: "compaction", brain: "anthropic", model: "claude-haiku-4-5-20251001", ms: 700, input: 1000, output: 200, cache_write: 0, cache_read: 0 },
  { at: "2025-06-02T09:00:00.000Z", kind: "turn", brain: "openai", model: "qwen3:8b", ms: 800, input: 300, output: 40, cache_write: 0, cache_read: 0 }
].map((entry) => `${JSON.stringify(entry)}\n`).join("") + "{\"at\":\"2025-06-02T09:0"

describe("planckclaw usage (built command)", () => {
  it.live("sums per day and model with cost and cache share; --since, --json, PLANCKCLAW_PRICES", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({}, "planckclaw-usage-")
      box.writeMemory("usage.jsonl", ledger)
      const all = yield* Cli.run(["usage"], { cwd: box.dir, env: box.env })
      expect(all.stderr).toBe("")
      expect(all.code).toBe(0)
      expect(all.stdout).toBe([
        "day         model                      requests  input  output  cache write  cache read      cost",
        "2025-06-01  claude-haiku-4-5-20251001         3   1220     290         2000        2000   $0.0054",
        "2025-06-02  qwen3:8b                          1    300      40            0           0  no price",
        "",
        "Total: 4 requests, 5520 input tokens (36.2% read from the prompt cache), 330 output tokens, " +
        "estimated $0.0054 (no price for qwen3:8b).",
        "Skipped 1 unreadable ledger line.",
        ""
      ].join("\n"))

      fs.writeFileSync(box.path("prices.json"), JSON.stringify({ "qwen3": { input: 1, output: 2, cache_write: 1, cache_read: 0.5 } }))
      const json = yield* Cli.run(["usage", "--since", "2025-06-02", "--json"], {
        cwd: box.dir,
        env: box.envWith({ PLANCKCLAW_PRICES: box.path("prices.json") })
      })
      expect(json.code).toBe(0)
      expect(JSON.parse(json.stdout)).toEqual({
        since: "2025-06-02",
        rows: [{ day: "2025-06-02", model: "qwen3:8b", requests: 1, input: 300, output: 40, cache_write: 0, cache_read: 0, cost: 0.00038 }],
        total: { requests: 1, input: 300, output: 40, cache_write: 0, cache_read: 0, cost: 0.00038, cache_share: 0, unpriced: [] },
        skipped: 1
      })
    }))

  it.live("--since reads the ledger from its end back to that day: months of lines before it, over what one read can hold, are not read", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({}, "planckclaw-usage-")
      box.writeMemory("usage.jsonl", "")
      const file = path.join(box.memory, "usage.jsonl")
      // 540 MB before the period (a sparse file: no disk), as a busy agent's ledger grows to in a year or two.
      fs.truncateSync(file, 540_000_000)
      fs.appendFileSync(file, `\n${ledger}\n`)
      const period = yield* Cli.run(["usage", "--since", "2025-06-02", "--json"], { cwd: box.dir, env: box.env })
      expect([period.code, period.stderr]).toEqual([0, ""])
      expect(JSON.parse(period.stdout)).toMatchObject({ since: "2025-06-02", rows: [{ day: "2025-06-02", model: "qwen3:8b", requests: 1, input: 300 }], skipped: 1 })
      fs.rmSync(file)
    }))

  it.live("refuses a bad --since, a period that ends before it begins and a bad PLANCKCLAW_PRICES with one line and exit 2", () =>
    Effect.gen(function*() {
      const box = yield* sandbox({}, "planckclaw-usage-")
      const since = yield* Cli.run(["usage", "--since", "2025-02-30"], { cwd: box.dir, env: box.env })
      expect(since.code).toBe(2)
      expect(since.stderr).toBe("planckclaw: --since \"2025-02-30\": expected a date as YYYY-MM-DD\n")
      const backwards = yield* Cli.run(["usage", "--since", "2026-02-01", "--until", "2026-01-01"], { cwd: box.dir, env: box.env })
      expect([backwards.code, backwards.stderr]).toEqual([
        2,
        "planckclaw: --since 2026-02-01 is after --until 2026-01-01: the period would be empty (both days are included)\n"
      ])
      const oneDay = yield* Cli.run(["usage", "--since", "2026-01-01", "--until", "2026-01-01"], { cwd: box.dir, env: box.env })
      expect(oneDay.code).toBe(0)
      fs.writeFileSync(box.path("prices.json"), JSON.stringify({ "gpt-x": { input: -1, output: 2, cache_write: 1, cache_read: 0.5 } }))
      const prices = yield* Cli.run(["usage"], { cwd: box.dir, env: box.envWith({ PLANCKCLAW_PRICES: box.path("prices.json") }) })
      expect(prices.code).toBe(2)
      expect(prices.stderr).toMatch(/^planckclaw: PLANCKCLAW_PRICES: .*prices\.json is not a price table .*\n$/)
      const none = yield* Cli.run(["usage"], { cwd: box.dir, env: box.env })
      expect(none.stdout).toBe("No usage recorded yet.\n")
    }))
})
