/**
 * A stdio server's output as MCP reads it: each message is a JSON object on
 * a line of its own, so a line that does not start with `{` is something
 * else the server printed (a banner, a debug line), dropped here as the
 * official SDK's client drops it (Claude Desktop and Cursor run such
 * servers), not taken for a broken protocol, which closes effect/ai's
 * stdio transport. Filtered as the bytes stream, no line held whole.
 */

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

export interface StdoutLines {
  /** The chunk's bytes of message lines, in order (the chunk itself when it is all of them). */
  readonly keep: (chunk: Uint8Array) => Uint8Array
  /** The first line dropped (its start), once it has been read; said once, then undefined. */
  readonly firstDropped: () => string | undefined
}

export const make = (): StdoutLines => {
  let line: "start" | "message" | "other" = "start"
  /** The first dropped line's bytes, while it is read; then read (or long enough), then said. */
  let first: { readonly bytes: Array<number>; read: boolean; said: boolean } | undefined
  /**
   * The mark's bytes a line began with (at most as many as are said), kept
   * until the first dropped line is found: a character from U+F000 to
   * U+FFFF starts with a byte a mark's does, and is said whole (a leading
   * mark is left out when said).
   */
  let lead: Array<number> = []

  const keep = (chunk: Uint8Array): Uint8Array => {
    const ranges: Array<readonly [number, number]> = []
    let from = 0
    for (let at = 0; at < chunk.length; at++) {
      const byte = chunk[at]!
      if (line === "start") {
        if (byte === openBrace) {
          line = "message"
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
      if (line === "message") ranges.push([from, at + 1])
      line = "start"
    }
    if (line === "message") ranges.push([from, chunk.length])
    if (ranges.length === 1 && ranges[0]![0] === 0 && ranges[0]![1] === chunk.length) return chunk
    const kept = new Uint8Array(ranges.reduce((total, [start, end]) => total + end - start, 0))
    let to = 0
    for (const [start, end] of ranges) {
      kept.set(chunk.subarray(start, end), to)
      to += end - start
    }
    return kept
  }

  const firstDropped = () => {
    if (first === undefined || !first.read || first.said) return undefined
    first.said = true
    // The decoder leaves out a leading byte order mark.
    return new TextDecoder().decode(Uint8Array.from(first.bytes)).trimStart()
  }

  return { keep, firstDropped }
}
