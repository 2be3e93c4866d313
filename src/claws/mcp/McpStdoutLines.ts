/**
 * A stdio server's output as MCP reads it: each message is a JSON-RPC
 * object on a line of its own, so any other line is something else the
 * server printed (a banner, a debug line, a log record as JSON), dropped
 * here as the official SDK's client drops it (Claude Desktop and Cursor run
 * such servers), not taken for a broken protocol, which closes effect/ai's
 * stdio transport. A line that does not start with `{` is dropped as its
 * bytes stream; one that does is held until its end and passed on if it is
 * a JSON-RPC message (`"jsonrpc":"2.0"`, and a method, or an id with a
 * result or an error), else dropped. A message that claims JSON-RPC is
 * passed on even if the transport will refuse it (a wrong field, an error
 * answering no request): it is the protocol's, and a broken answer would
 * otherwise leave its call waiting out the timeout. A line held past the
 * message limit is passed on unjudged, for the transport to refuse for its
 * size.
 */
import * as Result from "effect/Result"

const newline = 0x0a
const openBrace = 0x7b
/**
 * What may come before a line's `{` (or make a blank line): space, tab, CR,
 * and the bytes of a UTF-8 byte order mark, which some servers write first
 * (the transport's decoder would drop it; no other line starts with them).
 */
const isBlank = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0d || byte === 0xef || byte === 0xbb || byte === 0xbf

/** How much of a dropped line is kept to say what it was. */
const shownMax = 200

const decoder = new TextDecoder()

/** Whether a line that starts with `{` is a JSON-RPC message (of any method), not some other JSON a server printed. */
export const isJsonRpcMessage = (line: string): boolean => {
  const parsed = Result.try(() => JSON.parse(line) as unknown)
  if (Result.isFailure(parsed)) return false
  const value = parsed.success
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const message = value as Record<string, unknown>
  return message.jsonrpc === "2.0" &&
    (typeof message.method === "string" || ("id" in message && ("result" in message || "error" in message)))
}

export interface StdoutLines {
  /** The chunk's bytes of message lines, in order (the chunk itself when it is all of them). */
  readonly keep: (chunk: Uint8Array) => Uint8Array
  /** The first line dropped (its start), once it has been read; said once, then undefined. */
  readonly firstDropped: () => string | undefined
}

const concat = (pieces: ReadonlyArray<Uint8Array>): Uint8Array => {
  const joined = new Uint8Array(pieces.reduce((total, piece) => total + piece.length, 0))
  let to = 0
  for (const piece of pieces) {
    joined.set(piece, to)
    to += piece.length
  }
  return joined
}

/** `maxLineBytes`: the most a line is held to be judged (the transport's message limit). */
export const make = (maxLineBytes: number): StdoutLines => {
  /** "held": a `{` line read so far, to be judged at its end; "passed": one held past the limit, passed on as it comes. */
  let line: "start" | "held" | "passed" | "other" = "start"
  let held: Array<Uint8Array> = []
  let heldBytes = 0
  /** The first dropped line's bytes, while it is read; then read (or long enough), then said. */
  let first: { readonly bytes: Array<number>; read: boolean; said: boolean } | undefined
  /**
   * The mark's bytes a line began with (at most as many as are said), kept
   * until the first dropped line is found: a character from U+F000 to
   * U+FFFF starts with a byte a mark's does, and is said whole (a leading
   * mark is left out when said).
   */
  let lead: Array<number> = []

  /** A held line ended: passed on (unjudged past the limit), or dropped and noted. */
  const judge = (out: Array<Uint8Array>) => {
    const whole = held.length === 1 ? held[0]! : concat(held)
    held = []
    heldBytes = 0
    if (whole.length > maxLineBytes || isJsonRpcMessage(decoder.decode(whole))) out.push(whole)
    else if (first === undefined) first = { bytes: [...whole.subarray(0, shownMax)].filter((byte) => byte !== newline), read: true, said: false }
  }

  const keep = (chunk: Uint8Array): Uint8Array => {
    const out: Array<Uint8Array> = []
    let from = 0
    for (let at = 0; at < chunk.length; at++) {
      const byte = chunk[at]!
      if (line === "start") {
        if (byte === openBrace) {
          line = "held"
          from = at
          if (lead.length > 0) lead = []
        } else if (byte === newline) {
          if (lead.length > 0) lead = []
        } else if (!isBlank(byte)) {
          line = "other"
          if (first === undefined) {
            first = { bytes: lead, read: false, said: false }
            lead = []
          }
        } else if (first === undefined && byte > 0x7f && lead.length < shownMax) lead.push(byte)
      }
      if (line === "other" && first !== undefined && !first.read) {
        if (byte === newline || first.bytes.length === shownMax) first.read = true
        else first.bytes.push(byte)
      }
      if (byte !== newline) continue
      if (line === "held") {
        held.push(chunk.subarray(from, at + 1))
        judge(out)
      } else if (line === "passed") out.push(chunk.subarray(from, at + 1))
      line = "start"
      from = at + 1
    }
    if (line === "passed") out.push(chunk.subarray(from))
    else if (line === "held" && from < chunk.length) {
      // Copied: the stream's next chunk may reuse this one's memory.
      held.push(chunk.slice(from))
      heldBytes += chunk.length - from
      if (heldBytes > maxLineBytes) {
        out.push(...held)
        held = []
        heldBytes = 0
        line = "passed"
      }
    }
    if (out.length !== 1) return concat(out)
    const only = out[0]!
    const isChunk = only.buffer === chunk.buffer && only.byteOffset === chunk.byteOffset && only.length === chunk.length
    return isChunk ? chunk : only
  }

  const firstDropped = () => {
    if (first === undefined || !first.read || first.said) return undefined
    first.said = true
    // The decoder leaves out a leading byte order mark.
    return decoder.decode(Uint8Array.from(first.bytes)).trim()
  }

  return { keep, firstDropped }
}
