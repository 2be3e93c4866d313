/**
 * A reply goes out under its message's journal key, the same after a crash:
 * a bridge that can drop a second send of one reply (Discord's nonces) sees
 * a reply delivered again after a restart as the same reply.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { text } from "../../src/brain/ScriptedBrain.js"
import { harness } from "../support/Harness.js"

describe("the key of a reply", () => {
  it.effect("is its message's journal key, a different one for each message", () =>
    Effect.gen(function*() {
      const h = yield* harness({ script: [text("one"), text("two")] })
      yield* h.offer("first")
      yield* h.offer("second")
      const [first, second] = [yield* h.reply, yield* h.reply]
      expect(first.text).toBe("one")
      expect(second.text).toBe("two")
      expect(first.key).toEqual(expect.any(String))
      expect(second.key).toEqual(expect.any(String))
      expect(second.key).not.toBe(first.key)
    }))

  it.effect("is the journal's key for a reply decided before a crash and delivered after it, without asking the brain", () =>
    Effect.gen(function*() {
      const inbox = [
        JSON.stringify({ accepted: 1, key: "k-before-the-crash", channel: "cli", text: "hello" }),
        JSON.stringify({ answered: 1, reply: "decided before", stored: true })
      ].join("\n") + "\n"
      const h = yield* harness({ script: [], inbox })
      const reply = yield* h.reply
      expect(reply).toEqual({ channel: "cli", text: "decided before", key: "k-before-the-crash" })
      expect(yield* h.requests).toEqual([])
    }))
})
