/**
 * Low-level reads of history.jsonl that cost the same whatever the file's
 * size: the tail is read backwards in blocks, never the whole file.
 */
import * as fs from "node:fs"
import { StringDecoder } from "node:string_decoder"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { isWellFormed, wellFormed } from "../runtime/WellFormed.js"

const BLOCK = 64 * 1024

export const HistoryEntry = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: Schema.String
})
export type HistoryEntry = typeof HistoryEntry.Type


/**
 * A history line as the original agent writes it: exactly role and content.
 * Well-formed: JSON would spell a lone surrogate as `\ud83d`, which every
 * later read would have to repair (see parseLine).
 */
export const encodeEntry = (entry: HistoryEntry): string =>
  JSON.stringify({ role: entry.role, content: wellFormed(entry.content) })

const isEntry = (value: unknown): value is HistoryEntry => {
  if (typeof value !== "object" || value === null) return false
  const { content, role } = value as { readonly role?: unknown; readonly content?: unknown }
  return (role === "user" || role === "assistant") && typeof content === "string"
}

/**
 * JSON.parse and a type guard, not Schema.parseJson: a turn parses
 * HISTORY_KEEP lines and a compaction every line, and this is about 4x
 * faster. Accepts exactly what HistoryEntry accepts; extra keys are dropped.
 * A content holding a lone surrogate (`\ud83d` in the JSON, written by
 * hand or by an older build) is repaired, each lone half replaced by
 * U+FFFD, and the line given to `repaired` so the reader can say so: the
 * exchange is kept, and no request carries what the API refuses.
 */
export const parseLine = (line: string, repaired?: (line: string) => void): Option.Option<HistoryEntry> => {
  const parsed = Result.try(() => JSON.parse(line) as unknown)
  if (Result.isFailure(parsed) || !isEntry(parsed.success)) return Option.none()
  const { content, role } = parsed.success
  if (isWellFormed(content)) return Option.some({ role, content })
  repaired?.(line)
  return Option.some({ role, content: wellFormed(content) })
}

const sizeOf = (fd: number): number => fs.fstatSync(fd).size

export interface Tail {
  /** Where the tail begins. */
  readonly offset: number
  /** How many lines it holds: `lines`, or fewer when the file has fewer. */
  readonly count: number
}

/**
 * Finds where the last `lines` lines begin by scanning back from the end in
 * blocks. A final line without its newline counts as a line.
 */
export const scanTail = (fd: number, lines: number, size: number = sizeOf(fd)): Tail => {
  if (size === 0 || lines <= 0) return { offset: size, count: 0 }
  const buffer = Buffer.allocUnsafe(BLOCK)
  let count = 0
  let position = size
  while (position > 0) {
    const start = Math.max(0, position - BLOCK)
    const length = position - start
    fs.readSync(fd, buffer, 0, length, start)
    // lastIndexOf is a native memrchr: far faster than a byte loop in JS.
    for (let i = buffer.lastIndexOf(0x0a, length - 1); i >= 0; i = i === 0 ? -1 : buffer.lastIndexOf(0x0a, i - 1)) {
      // The newline ending the file terminates the last line; it starts none.
      if (start + i === size - 1) continue
      count++
      if (count === lines) return { offset: start + i + 1, count }
    }
    position = start
  }
  return { offset: 0, count: count + 1 }
}

export const readRange = (fd: number, start: number, end: number): string => {
  const length = end - start
  if (length <= 0) return ""
  const buffer = Buffer.allocUnsafe(length)
  let read = 0
  while (read < length) {
    const n = fs.readSync(fd, buffer, read, length - read, start + read)
    if (n === 0) break
    read += n
  }
  return buffer.toString("utf8", 0, read)
}

/** A history line longer than this is skipped unread: no real exchange is that long. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

export interface TailLines {
  readonly lines: ReadonlyArray<string>
  /** Sizes of the lines too long to read. */
  readonly oversized: ReadonlyArray<number>
}

/**
 * The lines of [offset, end), reading only those of at most `maxLineBytes`,
 * so one giant line (a corrupted file) cannot exhaust memory.
 */
export const readLines = (fd: number, offset: number, end: number, maxLineBytes = MAX_LINE_BYTES): TailLines => {
  if (end - offset <= maxLineBytes) return { lines: splitLines(readRange(fd, offset, end)), oversized: [] }
  const lines: Array<string> = []
  const oversized: Array<number> = []
  const buffer = Buffer.allocUnsafe(BLOCK)
  let start = offset
  let position = offset
  while (position < end) {
    const n = fs.readSync(fd, buffer, 0, Math.min(BLOCK, end - position), position)
    if (n === 0) break
    const newline = buffer.subarray(0, n).indexOf(0x0a)
    if (newline === -1) {
      position += n
      continue
    }
    const lineEnd = position + newline
    if (lineEnd - start <= maxLineBytes) lines.push(readRange(fd, start, lineEnd))
    else oversized.push(lineEnd - start)
    start = position = lineEnd + 1
  }
  if (start < end) {
    if (end - start <= maxLineBytes) lines.push(readRange(fd, start, end))
    else oversized.push(end - start)
  }
  return { lines, oversized }
}

/** Splits text into lines; a trailing newline does not make an empty last line. */
export const splitLines = (text: string): Array<string> => {
  if (text.length === 0) return []
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

/** Whether the file is empty or ends with a newline (else an append must add one first). */
export const endsWithNewline = (fd: number, size: number = sizeOf(fd)): boolean => {
  if (size === 0) return true
  const last = Buffer.allocUnsafe(1)
  fs.readSync(fd, last, 0, 1, size - 1)
  return last[0] === 0x0a
}

/** History's line count at a given inode and size. */
export interface LineCount {
  readonly inode: number
  readonly size: number
  readonly lines: number
  readonly endsWithNewline: boolean
}

/** Counts the lines appended to a file since `count` was taken. */
export const extendCount = (fd: number, count: LineCount, size: number): LineCount => {
  if (size === count.size) return count
  const buffer = Buffer.allocUnsafe(Math.min(size - count.size, 1024 * 1024))
  let newlines = 0
  let lastByte = 0
  for (let position = count.size; position < size;) {
    const n = fs.readSync(fd, buffer, 0, Math.min(buffer.length, size - position), position)
    if (n === 0) break
    for (let i = 0; i < n; i++) if (buffer[i] === 0x0a) newlines++
    lastByte = buffer[n - 1]!
    position += n
  }
  // An unterminated last line was already counted; its newline does not add one.
  const completed = count.endsWithNewline || count.size === 0 ? 0 : 1
  const endsWithNewline = lastByte === 0x0a
  const lines = count.lines - completed + newlines + (endsWithNewline ? 0 : 1)
  return { inode: count.inode, size, lines, endsWithNewline }
}

/**
 * The lines of [0, end) as a stream, read forward in blocks, for folding a
 * large backlog without holding it in memory.
 */
export const streamLines = (path: string, end: number): Stream.Stream<string, Error> =>
  Stream.unwrap(Effect.map(
    // Open for the stream's life (its scope), never through a link planted in place of history.jsonl.
    Effect.acquireRelease(
      Effect.try({ try: () => fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW), catch: (e) => e as Error }),
      (fd) => Effect.sync(() => fs.closeSync(fd))
    ),
    (fd) => {
      // Small blocks keep each block's strings short-lived: a million-line
      // fold then stays within a small heap instead of piling up garbage.
      const buffer = Buffer.allocUnsafe(128 * 1024)
      // Keeps a multi-byte character split across two blocks whole.
      const decoder = new StringDecoder("utf8")
      return Stream.paginate({ position: 0, carry: "" }, (state: { readonly position: number; readonly carry: string }) =>
        Effect.try({
          try: () => {
            const length = Math.min(buffer.length, end - state.position)
            const n = length > 0 ? fs.readSync(fd, buffer, 0, length, state.position) : 0
            if (n === 0) {
              const rest = state.carry + decoder.end()
              const last = rest.length > 0 ? [rest] : []
              return [last, Option.none()] as const
            }
            const text = state.carry + decoder.write(buffer.subarray(0, n))
            const cut = text.lastIndexOf("\n")
            const complete = cut === -1 ? "" : text.slice(0, cut)
            const lines = cut === -1 ? [] : complete.split("\n")
            let carry = cut === -1 ? text : text.slice(cut + 1)
            // A giant line is not an exchange: keep only its head, enough to be
            // reported as undecodable, instead of growing without bound.
            if (carry.length > MAX_LINE_BYTES) carry = carry.slice(0, 1024)
            return [lines, Option.some({ position: state.position + n, carry })] as const
          },
          catch: (e) => e as Error
        }))
    }
  ))
