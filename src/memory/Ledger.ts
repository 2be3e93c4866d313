/**
 * Which journaled exchanges are in history.jsonl, by the journal's key of
 * the exchange, not by its text: after a crash an exchange identical to the
 * last one (same question, same answer) is still a different exchange.
 *
 * The ledger (`.history-ledger.json`) is written before each append, naming
 * the key and the byte range the exchange will occupy. An exchange counts as
 * stored when history (the same file, by inode) holds exactly its bytes in
 * that range; a crash between the ledger and the append leaves a range past
 * the end of the file, so the exchange is appended again, once. Compaction
 * moves the ranges with the lines it keeps, in the same commit.
 *
 * The file is JSON lines: a whole ledger (`encode`; the only line of a
 * ledger written by older versions, and of one written by a compaction)
 * followed by one appended `{"inode","key","start","end"}` line per append
 * (`encodeRecord`), so naming a range ahead costs one write(2), not a
 * rewrite. Reading replays the lines; a torn last line (a crash mid-write)
 * is skipped, which forgets only a range whose append never happened.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { readRange } from "./HistoryFile.js"

const Entry = Schema.Struct({
  key: Schema.String,
  start: Schema.Number,
  end: Schema.Number,
  /** Folded into the summary by a compaction: stored, no longer in history. */
  folded: Schema.optional(Schema.Boolean)
})
export type Entry = typeof Entry.Type

const LedgerSchema = Schema.Struct({ inode: Schema.Number, exchanges: Schema.Array(Entry) })
export type Ledger = typeof LedgerSchema.Type

/**
 * A whole ledger (`encode`), checked by hand as `LedgerSchema` would decode
 * it (other keys ignored): read after every compaction, with up to KEEP
 * entries, where a Schema decode cost more than the rest of the parse.
 */
const asWhole = (value: unknown): { readonly inode: number; readonly exchanges: Array<Entry> } | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const { exchanges, inode } = value as Record<string, unknown>
  if (typeof inode !== "number" || !Array.isArray(exchanges)) return undefined
  const entries: Array<Entry> = []
  for (const candidate of exchanges as ReadonlyArray<unknown>) {
    if (typeof candidate !== "object" || candidate === null) return undefined
    const { end, folded, key, start } = candidate as Record<string, unknown>
    if (typeof key !== "string" || typeof start !== "number" || typeof end !== "number") return undefined
    if (folded !== undefined && typeof folded !== "boolean") return undefined
    entries.push(folded === undefined ? { key, start, end } : { key, start, end, folded })
  }
  return { inode, exchanges: entries }
}

/** JSON.parse without a throw: undefined for text that is no JSON. */
const parseJsonLine = (line: string): unknown => Result.getOrUndefined(Result.try(() => JSON.parse(line) as unknown))

/** An appended record line (`encodeRecord`): checked by hand, as it is all but every line of a ledger. */
const asRecord = (value: unknown): { inode: number; key: string; start: number; end: number } | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const { end, inode, key, start } = value as Record<string, unknown>
  return typeof inode === "number" && typeof key === "string" && typeof start === "number" && typeof end === "number"
    ? { inode, key, start, end }
    : undefined
}

/** Enough to cover every exchange a journal can hold pending across a crash. */
export const KEEP = 256

export const empty: Ledger = { inode: -1, exchanges: [] }

/**
 * An unreadable ledger is an empty one: the exchanges it named are appended
 * again rather than lost. Replays the lines as `record` would, on one array
 * of its own instead of a copy per line.
 */
export const parse = (text: string | undefined): Ledger => {
  if (text === undefined) return empty
  let inode = empty.inode
  let exchanges: Array<Entry> = []
  for (const line of text.split("\n")) {
    if (line.trim().length === 0) continue
    const value = parseJsonLine(line)
    if (value === undefined) continue
    // A record first: all but one line of a ledger is one (and no whole ledger has a `key`).
    const noted = asRecord(value)
    if (noted === undefined) {
      const whole = asWhole(value)
      if (whole !== undefined) {
        inode = whole.inode
        exchanges = whole.exchanges
      }
      continue
    }
    if (noted.inode !== inode) {
      inode = noted.inode
      exchanges = []
    } else {
      let kept = 0
      for (const entry of exchanges) if (entry.key !== noted.key) exchanges[kept++] = entry
      exchanges.length = kept
    }
    exchanges.push({ key: noted.key, start: noted.start, end: noted.end })
    if (exchanges.length > KEEP) exchanges.splice(0, exchanges.length - KEEP)
  }
  return inode === empty.inode && exchanges.length === 0 ? empty : { inode, exchanges }
}

export const encode = (ledger: Ledger): string => `${JSON.stringify(ledger)}\n`

/** The line appended to the ledger for `record(ledger, inode, key, start, end)`. */
export const encodeRecord = (inode: number, key: string, start: number, end: number): string =>
  `${JSON.stringify({ inode, key, start, end })}\n`

/** Whether history (open as `fd`, with this inode and size) already holds the exchange `key` as `text`. */
export const holds = (ledger: Ledger, fd: number, inode: number, size: number, key: string, text: string): boolean => {
  if (ledger.inode !== inode) return false
  const entry = ledger.exchanges.find((candidate) => candidate.key === key)
  if (entry === undefined) return false
  if (entry.folded === true) return true
  return entry.end <= size && Result.getOrElse(Result.try(() => readRange(fd, entry.start, entry.end) === text), () => false)
}

/** The ledger with `key` about to be written at [start, end) of the history with this inode. */
export const record = (ledger: Ledger, inode: number, key: string, start: number, end: number): Ledger => {
  const kept = ledger.inode === inode ? ledger.exchanges.filter((entry) => entry.key !== key) : []
  return { inode, exchanges: [...kept, { key, start, end }].slice(-KEEP) }
}

/**
 * A ledger's entries owned by one appender (no other ledger shares the
 * array), with their keys counted: the usual append asks whether its key
 * is named and records it without a scan or a copy of the entries.
 */
export interface OwnedEntries {
  readonly exchanges: Array<Entry>
  readonly keys: Map<string, number>
}

export const own = (exchanges: ReadonlyArray<Entry>): OwnedEntries => {
  const keys = new Map<string, number>()
  for (const entry of exchanges) keys.set(entry.key, (keys.get(entry.key) ?? 0) + 1)
  return { exchanges: exchanges.slice(), keys }
}

/**
 * `record` for a key the ledger does not name, on its own history (the
 * usual append), in place.
 */
export const recordNewInPlace = (owned: OwnedEntries, key: string, start: number, end: number): void => {
  owned.exchanges.push({ key, start, end })
  owned.keys.set(key, (owned.keys.get(key) ?? 0) + 1)
  while (owned.exchanges.length > KEEP) {
    const dropped = owned.exchanges.shift()?.key ?? ""
    const left = (owned.keys.get(dropped) ?? 1) - 1
    if (left > 0) owned.keys.set(dropped, left)
    else owned.keys.delete(dropped)
  }
}

/**
 * The ledger after a compaction that kept the bytes from `split` on of a
 * history of `size` bytes, in a new file `inode`: kept exchanges move down,
 * folded ones are marked stored, and ranges never written stay unwritten.
 */
export const afterFold = (ledger: Ledger, oldInode: number, inode: number, split: number, size: number): Ledger => {
  if (ledger.inode !== oldInode) return { inode, exchanges: [] }
  const exchanges = ledger.exchanges.flatMap((entry): Array<Entry> => {
    if (entry.folded === true) return [entry]
    if (entry.start >= split) return [{ key: entry.key, start: entry.start - split, end: entry.end - split }]
    // Begun before the split: folded if it was written whole, else it never was.
    return entry.end <= size ? [{ key: entry.key, start: 0, end: 0, folded: true }] : []
  })
  return { inode, exchanges }
}
