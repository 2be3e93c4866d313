/**
 * A clean stop (SIGTERM) of `planckclaw run --bridge none` while the
 * interact pipes hold work in flight: lines the agent has read, or not yet
 * read, from interact_in, and a reply only partly in interact_out. Nothing
 * the agent read is lost, and the next run delivers every reply whole, once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { make as brainServer, echo, type Handler, hang, lastUserText, text } from "../support/AnthropicServer.js"
import { line } from "../support/Harness.js"
import { eventually, within } from "./Bounds.js"
import { sandbox } from "./Campaign.js"
import { connectTo, listening, sendRaw } from "./FifoClient.js"
import { planckclaw } from "./Processes.js"

const TIMEOUT = 120_000
const GRACE = "20 seconds"

/** History lines of `texts` each answered by the echo brain. */
const answered = (...texts: ReadonlyArray<string>) => texts.map((said) => line("user", said) + line("assistant", `re: ${said}`)).join("")

/** The `accepted` records of an inbox journal, by text. */
const acceptedTexts = (journal: string | undefined): Array<string> =>
  (journal ?? "").split("\n").filter((raw) => raw !== "").map((raw) => JSON.parse(raw) as { accepted?: number; text?: string })
    .flatMap((record) => record.accepted === undefined ? [] : [record.text ?? ""])

describe("faults: a clean stop with the interact pipes in flight", () => {
  it.live("SIGTERM right after a burst of lines in one write → every line journaled, and the next run answers each once, in order", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      // After the first turn, the first run's turns never end: what it read is answered by the next run.
      let nextRun = false
      const server = yield* brainServer((request, index) => index === 0 || nextRun ? echo(request, index) : hang)
      const env = box.envWith({ ANTHROPIC_BASE_URL: server.url })
      const texts = Array.from({ length: 20 }, (_, n) => `m${n}`)
      const proc = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      yield* listening(box.runDir)
      yield* sendRaw(box.runDir, "cli\twarm\n")
      yield* eventually("the first exchange stored", () => box.memoryFile("history.jsonl") === answered("warm") ? true : undefined)
      // A bridge flushing its queue; the stop follows at once, whether the agent read them yet or not.
      yield* sendRaw(box.runDir, texts.map((said) => `cli\t${said}\n`).join(""))
      yield* proc.signal("SIGTERM")
      expect(yield* within("a clean stop", GRACE)(proc.ended)).toEqual({ code: 0, signal: null })
      expect(acceptedTexts(box.memoryFile(".inbox.jsonl"))).toEqual(texts)

      nextRun = true
      const again = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      const client = yield* connectTo(again, box.runDir)
      const replies: Array<string> = []
      for (const _ of ["warm", ...texts]) replies.push((yield* client.reply).text)
      expect(replies).toEqual(["warm", ...texts].map((said) => `re: ${said}`))
      yield* again.signal("SIGTERM")
      expect((yield* within("a clean stop", GRACE)(again.ended)).code).toBe(0)
      expect(box.memoryFile("history.jsonl")).toBe(answered("warm", ...texts))
      expect(box.memoryFile(".inbox.jsonl")).toBe("")
    }), TIMEOUT)

  it.live("SIGTERM while lines read wait behind a refusal that a full interact_out holds up → those lines journaled, answered by the next run", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      // The first reply is larger than the pipe: with no reader, its write, and every one after it, waits.
      const fill = "f".repeat(70_000)
      let nextRun = false
      const server = yield* brainServer((request, index) =>
        index === 0 ? text(fill) : nextRun ? echo(request, index) : hang)
      const env = box.envWith({ ANTHROPIC_BASE_URL: server.url })
      const texts = Array.from({ length: 5 }, (_, n) => `after ${n}`)
      const proc = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      yield* listening(box.runDir)
      yield* sendRaw(box.runDir, "cli\tfill\n")
      const filled = line("user", "fill") + line("assistant", fill)
      yield* eventually("the first exchange stored", () => box.memoryFile("history.jsonl") === filled ? true : undefined)
      // The refusal of the oversized line queues behind the first reply; the lines after it are read all the same.
      yield* sendRaw(box.runDir, `big\t${"x".repeat(1_100_000)}\n` + texts.map((said) => `cli\t${said}\n`).join(""))
      yield* proc.signal("SIGTERM")
      expect(yield* within("a clean stop", GRACE)(proc.ended)).toEqual({ code: 0, signal: null })
      expect(acceptedTexts(box.memoryFile(".inbox.jsonl"))).toEqual(["fill", ...texts])

      nextRun = true
      const again = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      const client = yield* connectTo(again, box.runDir)
      const replies: Array<string> = []
      while (replies.length < 1 + texts.length) {
        const reply = yield* client.reply
        if (reply.channel === "cli") replies.push(reply.text)
      }
      expect(replies).toEqual([fill, ...texts.map((said) => `re: ${said}`)])
      expect(box.memoryFile("history.jsonl")).toBe(filled + answered(...texts))
    }), TIMEOUT)

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
