/**
 * Lines of an append-only file read from a given end backwards, newest
 * first, in blocks: a page of the newest lines costs the same with a 1 GB
 * file as with a 1 KB one (history pages over HTTP, today's usage). Each line
 * comes with the byte offset where it starts, the cursor of the next page.
 */
import * as fs from "node:fs"
import { MAX_LINE_BYTES } from "./HistoryFile.js"

const BLOCK = 64 * 1024

export interface LineAt {
  readonly line: string
  /** Where the line starts in the file. */
  readonly offset: number
}

/**
 * Calls `visit` on each line ending at or before `end` (a final line without
 * its newline included), newest first, until it answers false or the file's
 * start is reached. A line over MAX_LINE_BYTES is passed over unread. Blank
 * lines are passed over. Answers whether `visit` stopped it.
 */
export const visitBackward = (fd: number, end: number, visit: (line: LineAt) => boolean): boolean => {
  const buffer = Buffer.allocUnsafe(BLOCK)
  // The bytes of the line being gathered, after the block being read (newest last).
  let pieces: Array<Buffer> = []
  let gathered = 0
  let lineEnd = end
  let position = end
  const emit = (start: number): boolean => {
    const length = lineEnd - start
    const tooLong = length > MAX_LINE_BYTES
    const text = tooLong ? "" : Buffer.concat(pieces, gathered).toString("utf8")
    pieces = []
    gathered = 0
    lineEnd = start - 1
    return tooLong || text.trim() === "" ? true : visit({ line: text, offset: start })
  }
  // A newline ending the range ends the last line; it starts none.
  if (end > 0) {
    fs.readSync(fd, buffer, 0, 1, end - 1)
    if (buffer[0] === 0x0a) lineEnd = position = end - 1
  }
  while (position > 0) {
    const start = Math.max(0, position - BLOCK)
    const length = fs.readSync(fd, buffer, 0, position - start, start)
    let cut = length
    for (let i = length === 0 ? -1 : buffer.lastIndexOf(0x0a, length - 1); i >= 0; i = i === 0 ? -1 : buffer.lastIndexOf(0x0a, i - 1)) {
      if (gathered + (cut - i - 1) <= MAX_LINE_BYTES) pieces.unshift(Buffer.from(buffer.subarray(i + 1, cut)))
      gathered += cut - i - 1
      cut = i
      if (!emit(start + i + 1)) return true
    }
    if (gathered + cut <= MAX_LINE_BYTES) pieces.unshift(Buffer.from(buffer.subarray(0, cut)))
    gathered += cut
    position = start
    if (length === 0) break
  }
  return (lineEnd > 0 || gathered > 0) && !emit(0)
}

/**
 * At most `limit` lines ending at or before `end`, newest first, that `keep`
 * keeps, and the `end` of the next page (null when this one reached the start).
 */
export const pageBackward = <A>(
  fd: number,
  end: number,
  limit: number,
  keep: (line: LineAt) => A | undefined
): { readonly items: Array<A>; readonly next: number | null } => {
  const items: Array<A> = []
  let oldest = end
  const stopped = visitBackward(fd, end, (line) => {
    oldest = line.offset
    const kept = keep(line)
    if (kept !== undefined) items.push(kept)
    return items.length < limit
  })
  return { items, next: stopped && oldest > 0 ? oldest : null }
}

/** Whether a line starts at `offset` of a file of `size` bytes: its start, its end, or just after a newline. */
export const startsLine = (fd: number, offset: number, size: number): boolean => {
  if (offset <= 0 || offset >= size) return true
  const byte = Buffer.allocUnsafe(1)
  fs.readSync(fd, byte, 0, 1, offset - 1)
  return byte[0] === 0x0a
}

/** The size of an open file. */
export const sizeOf = (fd: number): number => fs.fstatSync(fd).size
