/**
 * Faults of the interact side: bad bytes from a bridge. Most tests drive
 * `planckclaw run --bridge none` through the interact FIFOs with raw wire
 * bytes, as an external bridge or `printf … > interact_in` would; one drives
 * the terminal bridge through piped stdin. A bad message gets a clear reply
 * or is ignored, never truncated silently, and the next message is answered.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ONLY_CONTROLS } from "../../src/agent/Agent.js"
import { echo, summaryItems } from "../support/AnthropicServer.js"
import { answered, fifoAgent, session } from "./Campaign.js"

const TIMEOUT = 120_000

describe("faults: interact", () => {
  it.live("interact: a line with no tab → ignored with a warning, the next message answered", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      yield* agent.client.sendRaw("no tab on this line\n")
      yield* agent.client.send("hello")
      expect(yield* agent.client.reply).toEqual({ channel: "cli", text: "re: hello" })
      expect(agent.proc.stderr()).toMatch(/warn.*interact line has no tab.*no tab on this line/)
      expect((yield* agent.server.requests).length).toBe(1)
      yield* agent.stop
      expect(agent.box.memoryFile("history.jsonl")).toBe(answered(["hello", "re: hello"]))
    }), TIMEOUT)

  it.live("interact: a message over the 64 KiB default limit → a clear reply, nothing processed; one at the limit whole", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      const atLimit = "a".repeat(65536)
      yield* agent.client.send("b".repeat(65537), "big")
      yield* agent.client.send(atLimit, "exact")
      expect(yield* agent.client.reply).toEqual({
        channel: "big",
        text: "Your message is 65537 bytes; the limit is 65536 bytes (PLANCKCLAW_MAX_MESSAGE_BYTES). " +
          "Nothing was processed: please send it in smaller parts."
      })
      expect(yield* agent.client.reply).toEqual({ channel: "exact", text: `re: ${atLimit}` })
      const requests = yield* agent.server.requests
      expect(requests.map((request) => request.body.messages[0]!.content)).toEqual([atLimit])
      yield* agent.stop
      expect(agent.box.memoryFile("history.jsonl")).toBe(answered([atLimit, `re: ${atLimit}`]))
    }), TIMEOUT)

  it.live("interact: a line over the pipe's 1 MiB limit → the sender is told, nothing processed, loop goes on", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      yield* agent.client.send("c".repeat(2 * 1024 * 1024), "huge")
      yield* agent.client.send("after", "huge")
      const refusal = yield* agent.client.reply
      expect(refusal.channel).toBe("huge")
      expect(refusal.text).toMatch(/^Your message is more than 1048576 bytes.*Nothing was processed/)
      expect(yield* agent.client.reply).toEqual({ channel: "huge", text: "re: after" })
      expect((yield* agent.server.requests).map((request) => request.body.messages[0]!.content)).toEqual(["after"])
      yield* agent.stop
      expect(agent.box.memoryFile("history.jsonl")).toBe(answered(["after", "re: after"]))
    }), TIMEOUT)

  it.live("interact: a line over 1 MiB from a channel of 2000 bytes → that channel is told, as for its short lines", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      const channel = "c".repeat(2000)
      yield* agent.client.send("short", channel)
      expect(yield* agent.client.reply).toEqual({ channel, text: "re: short" })
      yield* agent.client.send("x".repeat(1024 * 1024), channel)
      const refusal = yield* agent.client.reply
      expect(refusal.channel).toBe(channel)
      expect(refusal.text).toMatch(/^Your message is more than 1048576 bytes.*Nothing was processed/)
      expect((yield* agent.server.requests).length).toBe(1)
    }), TIMEOUT)

  it.live("interact: invalid UTF-8 → replacement characters, answered and stored as valid JSON", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      yield* agent.client.sendRaw(Buffer.concat([Buffer.from("cli\tcaf"), Buffer.from([0xe9, 0x20, 0xff, 0xfe]), Buffer.from("!\n")]))
      expect(yield* agent.client.reply).toEqual({ channel: "cli", text: "re: caf\uFFFD \uFFFD\uFFFD!" })
      yield* agent.stop
      expect(agent.box.memoryFile("history.jsonl")).toBe(answered(["caf\uFFFD \uFFFD\uFFFD!", "re: caf\uFFFD \uFFFD\uFFFD!"]))
    }), TIMEOUT)

  it.live("interact: control characters → removed before the model sees them", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      yield* agent.client.send("he\u0000l\u0007lo\u001b[31m red\u007f\u0085 end\r\nnext")
      expect(yield* agent.client.reply).toEqual({ channel: "cli", text: "re: hello[31m red end\nnext" })
      expect((yield* agent.server.requests)[0]!.body.messages).toEqual([{ role: "user", content: "hello[31m red end\nnext" }])
      yield* agent.stop
      expect(agent.box.memoryFile("history.jsonl")).toBe(answered(["hello[31m red end\nnext", "re: hello[31m red end\nnext"]))
    }), TIMEOUT)

  it.live("interact: an empty message → ignored (no reply, no model call); control characters alone → refused; the next answered", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      yield* agent.client.sendRaw("cli\t\n")
      yield* agent.client.send("   \n\t ")
      yield* agent.client.send("\u0001\u0002")
      yield* agent.client.send("hello")
      // A bridge that waits for a reply to each line it sends gets one for a line of controls.
      expect(yield* agent.client.reply).toEqual({ channel: "cli", text: ONLY_CONTROLS })
      expect(yield* agent.client.reply).toEqual({ channel: "cli", text: "re: hello" })
      expect((yield* agent.server.requests).length).toBe(1)
      yield* agent.stop
      expect(agent.box.memoryFile("history.jsonl")).toBe(answered(["hello", "re: hello"]))
      expect(agent.box.memoryFile(".inbox.jsonl")).toBe("")
    }), TIMEOUT)

  it.live("interact: a burst of 200 messages in one write → every one answered once, in order", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(echo)
      const texts = Array.from({ length: 200 }, (_, n) => `burst ${n}`)
      yield* agent.client.sendRaw(texts.map((text) => `cli\t${text}\n`).join(""))
      const replies: Array<string> = []
      for (const _ of texts) replies.push((yield* agent.client.reply).text)
      expect(replies).toEqual(texts.map((text) => `re: ${text}`))
      yield* agent.stop
      // 400 lines pass HISTORY_MAX (200): older exchanges were folded into the summary.
      const history = agent.box.memoryFile("history.jsonl")!
      const kept = history.split("\n").filter((raw) => raw !== "").map((raw) => JSON.parse(raw) as { role: string; content: string })
      const remembered = [...summaryItems(agent.box.memoryFile("summary.md") ?? ""), ...kept.filter((entry) => entry.role === "user").map((entry) => entry.content)]
      expect(remembered).toEqual(texts)
      expect(history).toBe(answered(...texts.slice(texts.length - kept.length / 2).map((text) => [text, `re: ${text}`] as const)))
    }), TIMEOUT)

  it.live("interact: the terminal gets blank lines, control characters and an over-limit line → ignored, cleaned, refused", () =>
    Effect.gen(function*() {
      const t = yield* session(echo, { PLANCKCLAW_MAX_MESSAGE_BYTES: "1000" }, [
        "",
        "   ",
        "he\u0001llo",
        "x".repeat(1001),
        "y".repeat(1000)
      ])
      expect(t.replies).toEqual([
        "re: hello",
        "Your message is 1001 bytes; the limit is 1000 bytes (PLANCKCLAW_MAX_MESSAGE_BYTES). Nothing was processed: please send it in smaller parts.",
        `re: ${"y".repeat(1000)}`
      ])
      expect(t.requests.length).toBe(2)
      expect(t.box.memoryFile("history.jsonl")).toBe(
        answered(["hello", "re: hello"], ["y".repeat(1000), `re: ${"y".repeat(1000)}`])
      )
    }), TIMEOUT)
})
