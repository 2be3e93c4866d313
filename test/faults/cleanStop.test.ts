/**
 * A clean stop (SIGTERM) of `planckclaw run --bridge none` while the
 * interact pipes hold work in flight: a reply only partly in interact_out.
 * The next run delivers every reply whole, once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { make as brainServer, type Handler, lastUserText, text } from "../support/AnthropicServer.js"
import { line } from "../support/Harness.js"
import { eventually, within } from "./Bounds.js"
import { sandbox } from "./Campaign.js"
import { connectTo, listening, sendRaw } from "./FifoClient.js"
import { planckclaw } from "./Processes.js"

const TIMEOUT = 120_000
const GRACE = "20 seconds"

describe("faults: a clean stop with the interact pipes in flight", () => {
  it.live("SIGTERM with a reply only partly in a full interact_out → whole lines kept; the next run sends that reply whole, once", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      // Replies of 30,000 characters: two fill most of the 64 KiB pipe, the third fits only in part.
      const big = (said: string) => `[${said}]${said.repeat(30_000)}`
      const handler: Handler = (request) => text(big(lastUserText(request.body)))
      const server = yield* brainServer(handler)
      const env = box.envWith({ ANTHROPIC_BASE_URL: server.url })
      const proc = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      yield* listening(box.runDir)
      yield* sendRaw(box.runDir, "cli\tA\ncli\tB\ncli\tC\n")
      const stored = ["A", "B", "C"].map((said) => line("user", said) + line("assistant", big(said))).join("")
      yield* eventually("the three exchanges stored", () => box.memoryFile("history.jsonl") === stored ? true : undefined)
      yield* proc.signal("SIGTERM")
      expect(yield* within("a clean stop", GRACE)(proc.ended)).toEqual({ code: 0, signal: null })
      expect(box.memoryFile(".interact-out.unread")).toBe(`cli\t${big("A")}\ncli\t${big("B")}\n`)

      const again = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      const client = yield* connectTo(again, box.runDir)
      const replies = [yield* client.reply, yield* client.reply, yield* client.reply]
      expect(replies).toEqual(["A", "B", "C"].map((said) => ({ channel: "cli", text: big(said) })))
      // C comes once: the reply after it is the next message's.
      yield* client.send("D")
      expect(yield* client.reply).toEqual({ channel: "cli", text: big("D") })
      yield* again.signal("SIGTERM")
      expect((yield* within("a clean stop", GRACE)(again.ended)).code).toBe(0)
      expect(box.memoryFile(".interact-out.unread")).toBeUndefined()
      // C's reply was decided before the stop: sent again, not asked again, and stored once.
      expect(yield* server.turns).toHaveLength(4)
      expect(box.memoryFile("history.jsonl")).toBe(stored + line("user", "D") + line("assistant", big("D")))
    }), TIMEOUT)
})
