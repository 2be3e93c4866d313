/**
 * The bytes on the six FIFOs, as pure codecs (no I/O here).
 *
 * - interact_in / interact_out: `{channel}\t{text}\n`, text escaped
 *   (backslash `\\`, newline `\n`, tab `\t`, carriage return `\r`).
 * - brain_in / brain_out: one compact JSON document, then an empty line.
 * - claw_in: `__list_tools__\n` or `{name}\t{input_json}\n`.
 * - claw_out: the answer, then an empty line. An answer never holds an empty
 *   line on the wire: CR LF and lone CR become LF, trailing newlines are
 *   dropped, and every empty line (an empty answer included) is sent as a
 *   line holding a single space, which the reader turns back into an empty
 *   line.
 *
 * Incoming bytes are cut into lines or blank-line-terminated blocks by a
 * framer that does not care where the reads split them, and that rejects an
 * oversized frame with an error value instead of buffering it.
 */
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { type MessagesRequest, MessagesRequest as MessagesRequestSchema } from "./Brain.js"
import type { InboundMessage, OutboundMessage } from "./Interact.js"

/** Bytes that do not make a valid message of the protocol they arrived on. */
export class MalformedMessage extends Data.TaggedError("MalformedMessage")<{
  readonly message: string
}> {}

/** A line or block grew past the framer's limit; its bytes are skipped up to its end. */
export class FrameTooLarge extends Data.TaggedError("FrameTooLarge")<{
  readonly limit: number
  readonly message: string
  /**
   * The first bytes of a skipped line (up to `headBytes`, decoded), so a
   * reader can still tell who sent it: an interact line's channel.
   */
  readonly head?: string
}> {}

/** How much of a skipped line `FrameTooLarge.head` keeps. */
export const headBytes = 1024

// ---------------------------------------------------------------------------
// Interact lines

const escapes: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r" }
const unescapes: Record<string, string> = { "\\": "\\", n: "\n", t: "\t", r: "\r" }

/** Escapes text so that it fits on one line with no tab. */
export const escapeText = (text: string): string => text.replace(/[\\\n\t\r]/g, (c) => escapes[c] ?? c)

/** Reverses exactly `escapeText`; any other backslash sequence stays as it is. */
export const unescapeText = (escaped: string): string =>
  escaped.replace(/\\([\\ntr])/g, (sequence, c: string) => unescapes[c] ?? sequence)

/** `{channel}\t{escaped text}\n`; a channel holding a tab, CR or LF cannot be framed. */
export const encodeInteractLine = (message: OutboundMessage): Either.Either<string, MalformedMessage> =>
  /[\t\r\n]/.test(message.channel)
    ? Either.left(new MalformedMessage({ message: `channel ${JSON.stringify(message.channel)} holds a tab or line break` }))
    : Either.right(`${message.channel}\t${escapeText(message.text)}\n`)

/** Decodes one interact line (without its `\n`): the channel runs up to the first tab. */
export const decodeInteractLine = (line: string): Either.Either<InboundMessage, MalformedMessage> => {
  const tab = line.indexOf("\t")
  return tab === -1
    ? Either.left(new MalformedMessage({ message: `interact line has no tab between channel and text: ${excerpt(line)}` }))
    : Either.right({ channel: line.slice(0, tab), text: unescapeText(line.slice(tab + 1)) })
}

// ---------------------------------------------------------------------------
// Brain frames

const compactJson = (value: unknown): Either.Either<string, MalformedMessage> => {
  const encoded = Either.try({
    try: () => JSON.stringify(value) as string | undefined,
    catch: (error) => new MalformedMessage({ message: `value cannot be written as JSON: ${String(error)}` })
  })
  return Either.flatMap(encoded, (json) =>
    json === undefined
      ? Either.left(new MalformedMessage({ message: "value cannot be written as JSON" }))
      : Either.right(json))
}

/** Compact single-line JSON, then the empty line that ends a brain frame. */
export const encodeBrainFrame = (value: unknown): Either.Either<string, MalformedMessage> =>
  Either.map(compactJson(value), (json) => `${json}\n\n`)

/** What a brain bridge answers when it gives up. */
export const brainErrorFrame = (reason: "timeout" | "fatal"): string => `{"error":"${reason}"}\n\n`

// Fields the schema does not know (temperature, tool_choice, …) travel on untouched.
const decodeRequest = Schema.decodeUnknownEither(MessagesRequestSchema, { onExcessProperty: "preserve" })

/** Reads a brain request frame as a bridge receives it. */
export const decodeBrainRequest = (frame: string): Either.Either<MessagesRequest, MalformedMessage> => {
  const parsed = Either.try({
    try: () => JSON.parse(frame) as unknown,
    catch: () => new MalformedMessage({ message: `brain request is not JSON: ${excerpt(frame)}` })
  })
  return Either.flatMap(parsed, (json) =>
    Either.mapLeft(decodeRequest(json), (error) =>
      new MalformedMessage({
        message: `brain request is not a Messages API request: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
      })))
}

// ---------------------------------------------------------------------------
// Claw requests and answers

export const listToolsCommand = "__list_tools__"
export const listToolsRequest = `${listToolsCommand}\n`

export type ClawRequest = Data.TaggedEnum<{
  ListTools: {}
  Call: { readonly name: string; readonly input: unknown }
}>
export const ClawRequest = Data.taggedEnum<ClawRequest>()

/** `{name}\t{input_json}\n` with the input as compact one-line JSON. */
export const encodeClawCall = (name: string, input: unknown): Either.Either<string, MalformedMessage> =>
  name === "" || /[\t\r\n]/.test(name)
    ? Either.left(new MalformedMessage({ message: `tool name ${JSON.stringify(name)} cannot be framed` }))
    : Either.map(compactJson(input ?? {}), (json) => `${name}\t${json}\n`)

/**
 * Decodes one claw_in line (without its `\n`). A trailing CR is tolerated;
 * an empty input stands for `{}`.
 */
export const decodeClawRequest = (rawLine: string): Either.Either<ClawRequest, MalformedMessage> => {
  const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine
  if (line === listToolsCommand) return Either.right(ClawRequest.ListTools())
  const tab = line.indexOf("\t")
  if (tab <= 0) {
    return Either.left(new MalformedMessage({ message: `claw request is neither ${listToolsCommand} nor name<TAB>input: ${excerpt(line)}` }))
  }
  const name = line.slice(0, tab)
  const inputJson = line.slice(tab + 1).trim()
  if (inputJson === "") return Either.right(ClawRequest.Call({ name, input: {} }))
  return Either.map(
    Either.try({
      try: () => JSON.parse(inputJson) as unknown,
      catch: () => new MalformedMessage({ message: `input of tool ${name} is not JSON: ${excerpt(inputJson)}` })
    }),
    (input) => ClawRequest.Call({ name, input })
  )
}

/** The answer as it goes on claw_out, ending with the empty line. See the module comment. */
export const encodeClawAnswer = (text: string): string => {
  const normalized = text.replace(/\r\n?/g, "\n").replace(/\n+$/, "")
  return `${normalized.split("\n").map((line) => (line === "" ? " " : line)).join("\n")}\n\n`
}

/** Reverses `encodeClawAnswer` for a block read off claw_out. */
export const decodeClawAnswer = (block: string): string =>
  block.split("\n").map((line) => (line === " " ? "" : line)).join("\n")

// ---------------------------------------------------------------------------
// Framing

export type Frame = Either.Either<string, FrameTooLarge>

/** Cuts a byte stream into frames, whatever the chunk boundaries. Stateful: one per stream. */
export interface Framer {
  /** Feeds the next bytes; returns the frames they complete, in order. */
  readonly push: (chunk: Uint8Array) => ReadonlyArray<Frame>
}

type SizedLine = { readonly text: string; readonly bytes: number }
const newline = 0x0a
const utf8 = new TextDecoder()

const concat = (parts: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  if (parts.length === 1 && parts[0] !== undefined) return parts[0]
  const whole = new Uint8Array(size)
  let offset = 0
  for (const part of parts) {
    whole.set(part, offset)
    offset += part.length
  }
  return whole
}

const tooLarge = (what: string, limit: number, head?: Uint8Array) =>
  new FrameTooLarge({
    limit,
    message: `${what} longer than ${limit} bytes; skipped`,
    ...(head === undefined ? {} : { head: utf8.decode(head) })
  })

/** The first `headBytes` of a line cut short: what was buffered, then the piece that overflowed. */
const headOf = (parts: ReadonlyArray<Uint8Array>, piece: Uint8Array): Uint8Array => {
  const head = new Uint8Array(headBytes)
  let size = 0
  for (const part of [...parts, piece]) {
    if (size === headBytes) break
    const taken = part.subarray(0, headBytes - size)
    head.set(taken, size)
    size += taken.length
  }
  return head.subarray(0, size)
}

const makeLineSplitter = (maxLineBytes: number) => {
  let parts: Array<Uint8Array> = []
  let size = 0
  let skipping = false
  return (chunk: Uint8Array): Array<Either.Either<SizedLine, FrameTooLarge>> => {
    const out: Array<Either.Either<SizedLine, FrameTooLarge>> = []
    let start = 0
    while (start <= chunk.length) {
      const end = chunk.indexOf(newline, start)
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end)
      if (!skipping) {
        if (size + piece.length > maxLineBytes) {
          out.push(Either.left(tooLarge("line", maxLineBytes, headOf(parts, piece))))
          skipping = true
          parts = []
          size = 0
        } else if (piece.length > 0) {
          // A copy: the caller may reuse its buffer once push returns.
          parts.push(end === -1 ? piece.slice() : piece)
          size += piece.length
        }
      }
      if (end === -1) break
      if (skipping) skipping = false
      else out.push(Either.right({ text: utf8.decode(concat(parts, size)), bytes: size }))
      parts = []
      size = 0
      start = end + 1
    }
    return out
  }
}

/** Frames are lines without their `\n`; a line past `maxLineBytes` is one `FrameTooLarge`. */
export const makeLineFramer = (maxLineBytes: number): Framer => {
  const split = makeLineSplitter(maxLineBytes)
  return { push: (chunk) => split(chunk).map((line) => Either.map(line, (sized) => sized.text)) }
}

/**
 * Frames are blocks of non-empty lines ended by an empty line, joined with
 * `\n` (a trailing CR on each line is dropped, so CR LF works too). Extra
 * empty lines between blocks are ignored. A block past `maxBlockBytes` is one
 * `FrameTooLarge`, reported as soon as it overflows; its rest is skipped.
 */
export const makeBlockFramer = (maxBlockBytes: number): Framer => {
  const split = makeLineSplitter(maxBlockBytes)
  let lines: Array<string> = []
  let size = 0
  let skipping = false
  const overflow = (out: Array<Frame>) => {
    if (!skipping) out.push(Either.left(tooLarge("block", maxBlockBytes)))
    skipping = true
    lines = []
    size = 0
  }
  return {
    push: (chunk) => {
      const out: Array<Frame> = []
      for (const item of split(chunk)) {
        if (Either.isLeft(item)) {
          overflow(out)
          continue
        }
        const text = item.right.text.endsWith("\r") ? item.right.text.slice(0, -1) : item.right.text
        if (text === "") {
          if (!skipping && lines.length > 0) out.push(Either.right(lines.join("\n")))
          skipping = false
          lines = []
          size = 0
        } else if (!skipping) {
          size += item.right.bytes + 1
          if (size > maxBlockBytes + 1) overflow(out)
          else lines.push(text)
        }
      }
      return out
    }
  }
}

/** Applies a fresh framer to a byte stream. */
export const framed = (makeFramer: () => Framer) => <E, R>(chunks: Stream.Stream<Uint8Array, E, R>): Stream.Stream<Frame, E, R> =>
  Stream.suspend(() => {
    const framer = makeFramer()
    return Stream.mapConcat(chunks, framer.push)
  })

/** Limits that keep a misbehaving peer from growing our buffers without bound. */
export const defaultMaxLineBytes = 1024 * 1024
export const defaultMaxBlockBytes = 16 * 1024 * 1024

/** Short, single-line excerpt of untrusted text for error messages. */
const excerpt = (text: string, max = 120): string => {
  const flat = JSON.stringify(text.length > max ? text.slice(0, max) : text)
  return text.length > max ? `${flat}…` : flat
}
