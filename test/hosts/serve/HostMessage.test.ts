import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { echoBrain, startHost, tempDir } from "./Kit.js"

describe("a message sent to the agent host without HTTP (an embedder, Discord's routes)", () => {
  it.live("is refused by the HTTP API's own checks, with the same messages, before anything is journaled", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const brain = echoBrain()
      const agents = yield* startHost(root, brain.layer, { PLANCKCLAW_MAX_MESSAGE_BYTES: "100" })
      const cases: Array<[string, { text: string; channel?: string; idempotencyKey?: string }, string, string]> = [
        ["a", { text: " \n" }, "bad-input", "\"text\" is blank: there is nothing to answer"],
        ["a", { text: "half \ud83d" }, "bad-input", "\"text\" holds a lone UTF-16 surrogate (\\ud83d at character 6)"],
        ["a", { text: "x", channel: "\udc00" }, "bad-input", "\"channel\" holds a lone UTF-16 surrogate"],
        ["a", { text: "x", channel: "bad\u0001" }, "bad-input", "channel must be 1 to 256 characters without control characters"],
        ["a", { text: "x", channel: "" }, "bad-input", "channel must be 1 to 256 characters without control characters"],
        ["a", { text: "x", idempotencyKey: "has space" }, "bad-input", "Idempotency-Key must be 1 to 200 visible ASCII"],
        ["a", { text: "é".repeat(51) }, "too-large", "the message is 102 bytes; the limit is 100 (the host's PLANCKCLAW_MAX_MESSAGE_BYTES)"],
        ["Bob", { text: "x" }, "bad-id", "agent id \"Bob\" is not allowed: an id must match"]
      ]
      for (const [id, message, reason, says] of cases) {
        const refused = yield* Effect.flip(agents.send(id, message))
        expect(refused.reason, JSON.stringify(message)).toBe(reason)
        expect(refused.message, JSON.stringify(message)).toContain(says)
      }
      expect(brain.requests).toEqual([])
      expect(fs.existsSync(path.join(root, "agents", "a", ".inbox.jsonl"))).toBe(false)
      expect(yield* agents.send("a", { text: "é".repeat(50), channel: "discord-1" })).toEqual({ reply: `echo ${"é".repeat(50)}`, stored: true })
    }))
})
