/**
 * Cutting FIFO bytes into frames, as pure code (no I/O): lines, or blocks of
 * lines ended by an empty line, whatever the read boundaries, with an error
 * value instead of an unbounded buffer for an oversized frame. Also the
 * errors every wire codec shares.
 */
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"

/** Bytes that do not make a valid message of the protocol they arrived on. */
export class MalformedMessage extends Data.TaggedError("MalformedMessage")<{
  readonly message: string
}> {}

/** A line or block grew past the framer's limit; its bytes are skipped up to its end. */
export class FrameTooLarge extends Data.TaggedError("FrameTooLarge")<{
  readonly limit: number
  readonly message: string
  /**
   * The start of a skipped line, decoded, so a reader can still tell who
   * sent it: up to its first tab (an interact line's channel, however long,
   * as long as it ends within the limit), else its first `headBytes`.
   */
  readonly head?: string
}> {}

/** How much of a skipped line with no tab within the limit `FrameTooLarge.head` keeps. */
export const headBytes = 1024

export const compactJson = (value: unknown): Result.Result<string, MalformedMessage> => {
  const encoded = Result.try({
    try: () => JSON.stringify(value) as string | undefined,
    catch: (error) => new MalformedMessage({ message: `value cannot be written as JSON: ${String(error)}` })
  })
  return Result.flatMap(encoded, (json) =>
    json === undefined
      ? Result.fail(new MalformedMessage({ message: "value cannot be written as JSON" }))
      : Result.succeed(json))
}

export type Frame = Result.Result<string, FrameTooLarge>

/** Cuts a byte stream into frames, whatever the chunk boundaries. Stateful: one per stream. */
export interface Framer {
  /** Feeds the next bytes; returns the frames they complete, in order. */
  readonly push: (chunk: Uint8Array) => ReadonlyArray<Frame>
}

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

const tab = 0x09

/**
 * The start of a line cut short (what was buffered, then the piece that
 * overflowed, together past `limit`): up to and with a tab within its first
 * `limit` bytes, else its first `headBytes`. Looked for only when a line
 * overflows, in bytes held then anyway.
 */
const headOf = (parts: ReadonlyArray<Uint8Array>, piece: Uint8Array, limit: number): Uint8Array => {
  const held = [...parts, piece]
  let length: number | undefined
  let offset = 0
  for (const part of held) {
    const found = offset < limit ? part.subarray(0, limit - offset).indexOf(tab) : -1
    if (found !== -1) {
      length = offset + found + 1
      break
    }
    offset += part.length
  }
  const head = new Uint8Array(length ?? Math.min(headBytes, offset))
  let size = 0
  for (const part of held) {
    if (size === head.length) break
    const taken = part.subarray(0, head.length - size)
    head.set(taken, size)
    size += taken.length
  }
  return head
}

/**
 * Cuts chunks into lines: `onLine` gets each complete line's text and byte
 * length, `onTooLarge` each line past `maxLineBytes` (its rest skipped).
 * A line whole inside one chunk is decoded straight from it; only a line
 * split across chunks is buffered (as copies: the caller may reuse its
 * buffer once `push` returns; Buffer's own `slice` would not copy).
 */
const makeLineSplitter = (
  maxLineBytes: number,
  onLine: (text: string, bytes: number) => void,
  onTooLarge: (error: FrameTooLarge) => void
) => {
  const parts: Array<Uint8Array> = []
  let size = 0
  let skipping = false
  /** Ends the line in progress as if a newline came: what is held is a line, a skip is over. */
  const end = (): void => {
    if (size > 0) onLine(utf8.decode(concat(parts, size)), size)
    parts.length = 0
    size = 0
    skipping = false
  }
  const holding = (): boolean => size > 0 || skipping
  const push = (chunk: Uint8Array): void => {
    let start = 0
    while (start <= chunk.length) {
      const found = chunk.indexOf(newline, start)
      const end = found === -1 ? chunk.length : found
      const length = end - start
      if (!skipping) {
        if (size + length > maxLineBytes) {
          onTooLarge(tooLarge("line", maxLineBytes, headOf(parts, chunk.subarray(start, end), maxLineBytes)))
          skipping = true
          parts.length = 0
          size = 0
        } else if (found === -1) {
          if (length > 0) {
            parts.push(Uint8Array.prototype.slice.call(chunk, start, end))
            size += length
          }
          break
        } else if (size === 0) {
          onLine(utf8.decode(chunk.subarray(start, end)), length)
        } else {
          if (length > 0) parts.push(chunk.subarray(start, end))
          onLine(utf8.decode(concat(parts, size + length)), size + length)
          parts.length = 0
          size = 0
        }
      }
      if (found === -1) break
      skipping = false
      start = found + 1
    }
  }
  return { push, end, holding }
}

/** A line framer that can also be told a line ended without its newline. */
export interface LineFramer extends Framer {
  /** Whether part of a line is held, waiting for its newline. */
  readonly holding: () => boolean
  /** Ends the line held as if its newline came (its writer went away without one); returns its frame, if any. */
  readonly end: () => ReadonlyArray<Frame>
}

/** Frames are lines without their `\n`; a line past `maxLineBytes` is one `FrameTooLarge`. */
export const makeLineFramer = (maxLineBytes: number): LineFramer => {
  let out: Array<Frame> = []
  const split = makeLineSplitter(maxLineBytes, (text) => void out.push(Result.succeed(text)), (error) => void out.push(Result.fail(error)))
  return {
    push: (chunk) => {
      out = []
      split.push(chunk)
      return out
    },
    end: () => {
      out = []
      split.end()
      return out
    },
    holding: split.holding
  }
}

/**
 * Frames are blocks of non-empty lines ended by an empty line, joined with
 * `\n` (a trailing CR on each line is dropped, so CR LF works too). Extra
 * empty lines between blocks are ignored. A block past `maxBlockBytes` is one
 * `FrameTooLarge`, reported as soon as it overflows; its rest is skipped.
 */
export const makeBlockFramer = (maxBlockBytes: number): Framer => {
  let out: Array<Frame> = []
  const lines: Array<string> = []
  let size = 0
  let skipping = false
  const overflow = () => {
    if (!skipping) out.push(Result.fail(tooLarge("block", maxBlockBytes)))
    skipping = true
    lines.length = 0
    size = 0
  }
  const onLine = (line: string, bytes: number) => {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line
    if (text === "") {
      if (!skipping && lines.length > 0) out.push(Result.succeed(lines.length === 1 ? lines[0]! : lines.join("\n")))
      skipping = false
      lines.length = 0
      size = 0
    } else if (!skipping) {
      size += bytes + 1
      if (size > maxBlockBytes + 1) overflow()
      else lines.push(text)
    }
  }
  const split = makeLineSplitter(maxBlockBytes, onLine, overflow)
  return {
    push: (chunk) => {
      out = []
      split.push(chunk)
      return out
    }
  }
}

/** Applies a fresh framer to a byte stream. */
export const framed = (makeFramer: () => Framer) => <E, R>(chunks: Stream.Stream<Uint8Array, E, R>): Stream.Stream<Frame, E, R> =>
  Stream.suspend(() => {
    const framer = makeFramer()
    return Stream.flattenIterable(Stream.map(chunks, framer.push))
  })

/** Limits that keep a misbehaving peer from growing our buffers without bound. */
export const defaultMaxLineBytes = 1024 * 1024
export const defaultMaxBlockBytes = 16 * 1024 * 1024

/** Short, single-line excerpt of untrusted text for error messages. */
export const excerpt = (text: string, max = 120): string => {
  const flat = JSON.stringify(text.length > max ? text.slice(0, max) : text)
  return text.length > max ? `${flat}…` : flat
}
