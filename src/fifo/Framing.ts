/**
 * Cutting FIFO bytes into frames, as pure code (no I/O): lines, or blocks of
 * lines ended by an empty line, whatever the read boundaries, with an error
 * value instead of an unbounded buffer for an oversized frame. Also the
 * errors every wire codec shares.
 */
import * as Data from "effect/Data"
import * as Either from "effect/Either"
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
   * The first bytes of a skipped line (up to `headBytes`, decoded), so a
   * reader can still tell who sent it: an interact line's channel.
   */
  readonly head?: string
}> {}

/** How much of a skipped line `FrameTooLarge.head` keeps. */
export const headBytes = 1024

export const compactJson = (value: unknown): Either.Either<string, MalformedMessage> => {
  const encoded = Either.try({
    try: () => JSON.stringify(value) as string | undefined,
    catch: (error) => new MalformedMessage({ message: `value cannot be written as JSON: ${String(error)}` })
  })
  return Either.flatMap(encoded, (json) =>
    json === undefined
      ? Either.left(new MalformedMessage({ message: "value cannot be written as JSON" }))
      : Either.right(json))
}

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
export const excerpt = (text: string, max = 120): string => {
  const flat = JSON.stringify(text.length > max ? text.slice(0, max) : text)
  return text.length > max ? `${flat}…` : flat
}
