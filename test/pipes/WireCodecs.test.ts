import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Schema, Stream } from "effect"
import fc from "fast-check"
import { MessagesResponse } from "../../src/ports/Brain.js"
import { brainErrorFrame, decodeBrainRequest, encodeBrainFrame, plainBrainAnswer } from "../../src/pipes/BrainFrame.js"
import { decodeClawAnswer, decodeClawRequest, encodeClawAnswer, encodeClawCall } from "../../src/pipes/ClawFrame.js"
import { type Frame, FrameTooLarge, framed, headBytes, makeBlockFramer, makeLineFramer, MalformedMessage } from "../../src/runtime/Framing.js"
import { decodeInteractLine, encodeInteractLine, escapeText, eventsOptInChannel, unescapeText } from "../../src/pipes/InteractLine.js"
import { cancelFor } from "../../src/ports/Interact.js"

const bytes = (text: string) => new TextEncoder().encode(text)

/** Cuts `data` at the given offsets (taken modulo its length). */
const splitAt = (data: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(cuts.map((cut) => (data.length === 0 ? 0 : cut % data.length)))].sort((a, b) => a - b)
  const chunks: Array<Uint8Array> = []
  let start = 0
  for (const point of points) {
    chunks.push(data.subarray(start, point))
    start = point
  }
  chunks.push(data.subarray(start))
  return chunks
}

const feed = (framer: { push: (chunk: Uint8Array) => ReadonlyArray<Frame> }, chunks: ReadonlyArray<Uint8Array>) =>
  chunks.flatMap((chunk) => [...framer.push(chunk)])

const rights = (frames: ReadonlyArray<Frame>) => frames.map((frame) => Result.getOrThrow(frame))

// Text with a good share of the characters the escaping is about.
const wireText = fc.stringOf(
  fc.oneof(fc.constantFrom("\\", "\n", "\t", "\r", "n", "t", "r", " ", "é", "😀"), fc.fullUnicode()),
  { maxLength: 60 }
)
// U+FFFD stands for bytes that were not UTF-8: a channel holding it is refused (see below).
const channel = fc.stringOf(fc.fullUnicode().filter((c) => !"\t\r\n\uFFFD".includes(c)), { maxLength: 20 })

describe("interact escaping", () => {
  it("escapes backslash, newline, tab and carriage return as two characters each", () => {
    expect(escapeText("a\\b\nc\td\re")).toBe("a\\\\b\\nc\\td\\re")
  })

  it("reverses exactly those escapes and leaves any other backslash sequence alone", () => {
    expect(unescapeText("x\\\\ny\\tz\\r")).toBe("x\\ny\tz\r")
    expect(unescapeText("\\x\\u0041\\")).toBe("\\x\\u0041\\")
  })

  it("round-trips any text, and the escaped form has no line break or tab", () => {
    fc.assert(fc.property(wireText, (text) => {
      const escaped = escapeText(text)
      expect(escaped).not.toMatch(/[\n\t\r]/)
      expect(unescapeText(escaped)).toBe(text)
    }))
  })

  it("round-trips messages through a line", () => {
    fc.assert(fc.property(channel, wireText, (channelName, text) => {
      const line = Result.getOrThrow(encodeInteractLine({ channel: channelName, text }))
      expect(line.endsWith("\n")).toBe(true)
      expect(line.slice(0, -1)).not.toMatch(/\n/)
      expect(Result.getOrThrow(decodeInteractLine(line.slice(0, -1)))).toEqual({ channel: channelName, text })
    }))
  })

  it("splits channel from text at the first tab", () => {
    expect(Result.getOrThrow(decodeInteractLine("cli\tHello\\nWorld\tagain"))).toEqual({
      channel: "cli",
      text: "Hello\nWorld\tagain"
    })
  })

  it("gives an error value for a line with no tab", () => {
    const decoded = decodeInteractLine("no tab here")
    expect(Result.isFailure(decoded) && decoded.failure instanceof MalformedMessage).toBe(true)
  })

  it("refuses a line whose channel was not valid UTF-8 (a reply could not name it); bad bytes in the text cost a character", () => {
    const bytesOf = (...parts: ReadonlyArray<string | ReadonlyArray<number>>) =>
      new TextDecoder().decode(Buffer.concat(parts.map((part) => typeof part === "string" ? Buffer.from(part) : Buffer.from(part))))
    const badChannel = decodeInteractLine(bytesOf("user-", [0xff, 0xfe], "\thello"))
    expect(Result.isFailure(badChannel) && badChannel.failure.message).toContain("channel is not valid UTF-8")
    expect(Result.getOrThrow(decodeInteractLine(bytesOf("cli\thi ", [0xff])))).toEqual({ channel: "cli", text: "hi \uFFFD" })
  })

  it("frames a cancel as a text of one raw tab, which no message encodes to", () => {
    expect(Result.getOrThrow(encodeInteractLine(cancelFor("cli")))).toBe("cli\t\t\n")
    expect(Result.getOrThrow(decodeInteractLine("cli\t\t"))).toEqual(cancelFor("cli"))
    // A message of one tab travels escaped, and stays a (blank) message.
    const tab = Result.getOrThrow(encodeInteractLine({ channel: "cli", text: "\t" }))
    expect(tab).toBe("cli\t\\t\n")
    expect(Result.getOrThrow(decodeInteractLine(tab.slice(0, -1)))).toEqual({ channel: "cli", text: "\t" })
    // Two raw tabs and more text is a message, as before.
    expect(Result.getOrThrow(decodeInteractLine("cli\t\tx"))).toEqual({ channel: "cli", text: "\tx" })
  })

  it("reads a line a bridge ended with CR LF as the line itself: a raw CR is never part of an encoded one", () => {
    expect(Result.getOrThrow(decodeInteractLine("cli\thello\r"))).toEqual({ channel: "cli", text: "hello" })
    expect(Result.getOrThrow(decodeInteractLine("cli\t\t\r"))).toEqual(cancelFor("cli"))
    expect(eventsOptInChannel("cli\t\tevents\r")).toBe("cli")
    // One CR only, the line ending's: an escaped CR in the text stays.
    expect(Result.getOrThrow(decodeInteractLine("cli\tend\\r\r"))).toEqual({ channel: "cli", text: "end\r" })
  })

  it("refuses a channel that would break the line", () => {
    expect(Result.isFailure(encodeInteractLine({ channel: "a\tb", text: "x" }))).toBe(true)
    expect(Result.isFailure(encodeInteractLine({ channel: "a\nb", text: "x" }))).toBe(true)
  })
})

describe("brain frames", () => {
  it("are compact single-line JSON followed by an empty line", () => {
    const frame = Result.getOrThrow(encodeBrainFrame({ text: "two\nlines", nested: { a: [1, 2] } }))
    expect(frame).toBe("{\"text\":\"two\\nlines\",\"nested\":{\"a\":[1,2]}}\n\n")
    expect(brainErrorFrame("timeout")).toBe("{\"error\":\"timeout\"}\n\n")
  })

  it("cannot be made from a value JSON cannot hold", () => {
    expect(Result.isFailure(encodeBrainFrame(undefined))).toBe(true)
    expect(Result.isFailure(encodeBrainFrame({ big: 1n }))).toBe(true)
  })

  it("decode a request keeping fields the schema does not list", () => {
    const request = Result.getOrThrow(decodeBrainRequest(
      "{\"model\":\"m\",\"max_tokens\":5,\"temperature\":0.2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
    ))
    expect(request).toEqual({ model: "m", max_tokens: 5, temperature: 0.2, messages: [{ role: "user", content: "hi" }] })
  })

  it("decode a request keeping unlisted fields at every depth, unlisted first, then the schema's order", () => {
    const frame = JSON.stringify({
      temperature: 0.2,
      messages: [{ extra: 1, content: [{ text: "hi", type: "text", citations: [] }], role: "user" }],
      model: "m",
      max_tokens: 5,
      tools: [{ name: "t", description: "d", input_schema: { type: "object" }, strict: true }]
    })
    // As Effect 3's onExcessProperty "preserve" wrote it back, byte for byte.
    expect(JSON.stringify(Result.getOrThrow(decodeBrainRequest(frame)))).toBe(JSON.stringify({
      temperature: 0.2,
      model: "m",
      max_tokens: 5,
      tools: [{ strict: true, name: "t", description: "d", input_schema: { type: "object" } }],
      messages: [{ extra: 1, role: "user", content: [{ citations: [], type: "text", text: "hi" }] }]
    }))
  })

  it("reject a request that is not JSON or not a Messages request", () => {
    expect(Result.isFailure(decodeBrainRequest("{nope"))).toBe(true)
    expect(Result.isFailure(decodeBrainRequest("{\"model\":\"m\"}"))).toBe(true)
  })
})

describe("claw requests and answers", () => {
  it("encode a call as name, tab, compact JSON", () => {
    expect(Result.getOrThrow(encodeClawCall("echo", { text: "a\nb" }))).toBe("echo\t{\"text\":\"a\\nb\"}\n")
    expect(Result.getOrThrow(encodeClawCall("get_time", undefined))).toBe("get_time\t{}\n")
    expect(Result.isFailure(encodeClawCall("bad\tname", {}))).toBe(true)
  })

  it("decode discovery and calls, and reject anything else", () => {
    expect(Result.getOrThrow(decodeClawRequest("__list_tools__"))._tag).toBe("ListTools")
    expect(Result.getOrThrow(decodeClawRequest("__list_tools__\r"))._tag).toBe("ListTools")
    expect(Result.getOrThrow(decodeClawRequest("echo\t{\"a\":1}"))).toMatchObject({ _tag: "Call", name: "echo", input: { a: 1 } })
    expect(Result.getOrThrow(decodeClawRequest("get_time\t"))).toMatchObject({ _tag: "Call", name: "get_time", input: {} })
    expect(Result.isFailure(decodeClawRequest("get_time"))).toBe(true)
    expect(Result.isFailure(decodeClawRequest("\t{}"))).toBe(true)
    expect(Result.isFailure(decodeClawRequest("echo\tnot json"))).toBe(true)
  })

  it("never put an empty line inside an answer", () => {
    expect(encodeClawAnswer("a\n\nb\r\nc\rd\n\n")).toBe("a\n \nb\nc\nd\n\n")
    expect(encodeClawAnswer("")).toBe(" \n\n")
    expect(encodeClawAnswer("\n\nx")).toBe(" \n \nx\n\n")
  })

  it("come back as one block holding the normalised text, whatever the text", () => {
    // Normalised: CR LF and CR become LF, trailing newlines go, a line of one space reads as empty.
    const canonical = (text: string) =>
      text.replace(/\r\n?/g, "\n").replace(/\n+$/, "").split("\n").map((line) => line === " " ? "" : line).join("\n")
    fc.assert(fc.property(wireText, fc.array(fc.nat(), { maxLength: 8 }), (text, cuts) => {
      const frames = feed(makeBlockFramer(1 << 20), splitAt(bytes(encodeClawAnswer(text)), cuts))
      expect(frames).toHaveLength(1)
      expect(decodeClawAnswer(Result.getOrThrow(frames[0]!))).toBe(canonical(text))
    }))
  })
})

describe("line framing", () => {
  it("finds two messages in one write", () => {
    expect(rights(makeLineFramer(100).push(bytes("cli\tone\ncli\ttwo\n")))).toEqual(["cli\tone", "cli\ttwo"])
  })

  it("assembles one message split over many writes, multi-byte characters included", () => {
    const framer = makeLineFramer(100)
    const message = bytes("cli\tgrüße 😀\n")
    const frames = feed(framer, [...message].map((byte) => Uint8Array.of(byte)))
    expect(rights(frames)).toEqual(["cli\tgrüße 😀"])
  })

  it("yields exactly the lines written, for any chunk boundaries", () => {
    const line = fc.stringOf(fc.fullUnicode().filter((c) => c !== "\n"), { maxLength: 30 })
    fc.assert(fc.property(fc.array(line, { maxLength: 10 }), fc.array(fc.nat(), { maxLength: 20 }), (lines, cuts) => {
      const data = bytes(lines.map((l) => `${l}\n`).join(""))
      expect(rights(feed(makeLineFramer(1 << 20), splitAt(data, cuts)))).toEqual(lines)
    }))
  })

  it("keeps a partial line until its end arrives", () => {
    const framer = makeLineFramer(100)
    expect(framer.push(bytes("cli\tpart"))).toEqual([])
    expect(rights(framer.push(bytes("ial\n")))).toEqual(["cli\tpartial"])
  })

  it("ends a held line when told its writer left without a newline, and a skipped one without a frame", () => {
    const framer = makeLineFramer(8)
    expect(framer.holding()).toBe(false)
    expect(framer.push(bytes("a\tpart"))).toEqual([])
    expect(framer.holding()).toBe(true)
    expect(rights(framer.end())).toEqual(["a\tpart"])
    expect(framer.holding()).toBe(false)
    expect(rights(framer.push(bytes("b\tnew\n")))).toEqual(["b\tnew"])
    // Past the limit: refused once; the end stops the skip, so the next line is read.
    expect(framer.push(bytes("0123456789")).filter(Result.isFailure)).toHaveLength(1)
    expect(framer.holding()).toBe(true)
    expect(framer.end()).toEqual([])
    expect(rights(framer.push(bytes("c\tok\n")))).toEqual(["c\tok"])
  })

  it("rejects a line past the limit once, skips its rest, and carries on", () => {
    const framer = makeLineFramer(8)
    const frames = feed(framer, [bytes("short\n0123456"), bytes("789abcdef"), bytes("ghij\nok\n")])
    expect(frames).toHaveLength(3)
    expect(Result.getOrThrow(frames[0]!)).toBe("short")
    expect(Result.isFailure(frames[1]!) && frames[1].failure instanceof FrameTooLarge).toBe(true)
    expect(Result.getOrThrow(frames[2]!)).toBe("ok")
  })

  it("keeps a skipped line's start up to its first tab within the limit, however long, else its first headBytes", () => {
    const headOf = (frames: ReadonlyArray<Frame>) => frames.flatMap((frame) => Result.isFailure(frame) ? [frame.failure.head] : [])
    const channel = "c".repeat(headBytes + 976)
    // The channel in the line's first piece, and over several.
    expect(headOf(makeLineFramer(4096).push(bytes(`${channel}\t${"x".repeat(5000)}\n`)))).toEqual([`${channel}\t`])
    expect(headOf(feed(makeLineFramer(4096), [bytes(channel.slice(0, 1500)), bytes(`${channel.slice(1500)}\t`), bytes(`${"x".repeat(5000)}\n`)])))
      .toEqual([`${channel}\t`])
    // No tab within the limit: its first headBytes, and no channel.
    expect(headOf(makeLineFramer(4096).push(bytes(`${"c".repeat(4096)}\tx\n`)))).toEqual(["c".repeat(headBytes)])
  })
})

describe("block framing", () => {
  it("finds two frames in one write and ignores extra empty lines", () => {
    const frames = makeBlockFramer(100).push(bytes("{\"a\":1}\n\n\n{\"b\":2}\n\n"))
    expect(rights(frames)).toEqual(["{\"a\":1}", "{\"b\":2}"])
  })

  it("joins multi-line blocks and accepts CR LF", () => {
    expect(rights(makeBlockFramer(100).push(bytes("[\r\n 1,\r\n 2\r\n]\r\n\r\n")))).toEqual(["[\n 1,\n 2\n]"])
  })

  it("yields exactly the blocks written, for any chunk boundaries", () => {
    const blockLine = fc.stringOf(fc.fullUnicode().filter((c) => c !== "\n" && c !== "\r"), { minLength: 1, maxLength: 20 })
    const block = fc.array(blockLine, { minLength: 1, maxLength: 4 }).map((lines) => lines.join("\n"))
    fc.assert(fc.property(fc.array(block, { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 20 }), (blocks, cuts) => {
      const data = bytes(blocks.map((b) => `${b}\n\n`).join(""))
      expect(rights(feed(makeBlockFramer(1 << 20), splitAt(data, cuts)))).toEqual(blocks)
    }))
  })

  it("reports an oversized block once, as soon as it overflows, then reads the next one", () => {
    const framer = makeBlockFramer(10)
    const first = framer.push(bytes("0123456\n789abc\n"))
    expect(first).toHaveLength(1)
    expect(Result.isFailure(first[0]!)).toBe(true)
    expect(framer.push(bytes("more\n\n{}\n\n"))).toEqual([Result.succeed("{}")])
  })
})

describe("framed", () => {
  it.effect("frames a byte stream regardless of how it was chunked", () =>
    Effect.gen(function*() {
      const chunks = splitAt(bytes("cli\tone\ncli\ttwo\ncli\tthree\n"), [1, 5, 6, 13, 14, 20])
      const frames = yield* Stream.fromIterable(chunks).pipe(framed(() => makeLineFramer(100)), Stream.runCollect)
      expect(rights(frames)).toEqual(["cli\tone", "cli\ttwo", "cli\tthree"])
    }))
})

describe("plainBrainAnswer", () => {
  const decodeFull = Schema.decodeUnknownSync(MessagesResponse)
  it("builds exactly what the Schema decode builds, for the shapes it takes", () => {
    const answers: ReadonlyArray<unknown> = [
      { content: [{ type: "text", text: "hi" }], stop_reason: "end_turn" },
      {
        usage: { input_tokens: 3 },
        stop_reason: null,
        content: [
          { text: "a", type: "text", citations: [] },
          { input: { q: 1 }, name: "search", id: "toolu_1", type: "tool_use", extra: true }
        ],
        model: "m",
        role: "assistant",
        type: "message",
        id: "msg_1"
      },
      { content: [] },
      {
        content: [{ type: "text", text: "cached" }],
        usage: { cache_read_input_tokens: 900, output_tokens: 7, input_tokens: 12, cache_creation_input_tokens: null }
      }
    ]
    for (const answer of answers) {
      const plain = plainBrainAnswer(answer)
      expect(plain).toBeDefined()
      expect(JSON.stringify(plain)).toBe(JSON.stringify(decodeFull(answer)))
    }
  })

  it("leaves errors and other shapes to the Schema", () => {
    const others: ReadonlyArray<unknown> = [
      { error: "timeout" },
      { content: [{ type: "thinking", thinking: "…" }] },
      { content: [{ type: "text", text: 1 }] },
      { content: [{ type: "tool_use", id: "t", name: "n" }] },
      { content: "text" },
      { id: 1, content: [] },
      { stop_reason: 0, content: [] },
      { content: [], usage: { input_tokens: "12" } },
      { content: [], usage: [] },
      [],
      "text"
    ]
    for (const other of others) expect(plainBrainAnswer(other)).toBeUndefined()
  })
})
