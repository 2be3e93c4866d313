/**
 * The history window of a cache-stable prompt. A plain HISTORY_KEEP tail
 * slides by two lines every turn, so the first message of the request
 * changes every turn and nothing after the system prompt could ever be read
 * from the prompt cache. With caching on, the window is anchored instead:
 * it starts at the same history line turn after turn (the anchor) and grows
 * by the new exchanges, until it holds 2 × HISTORY_KEEP lines; then it is
 * cut back to the last HISTORY_KEEP, starting at a user line, and that line
 * is the new anchor. Between two re-anchorings, every request is the
 * previous one plus new messages, so the prefix up to the older history's
 * breakpoint is byte for byte the same.
 *
 * The trade-off: a turn sends between HISTORY_KEEP and 2 × HISTORY_KEEP
 * lines (all but the newest are read from the cache, at a tenth of the
 * input price), and one turn in HISTORY_KEEP / 2 pays to write the cache
 * again. The anchor lives in this process: after a restart the window is
 * anchored anew (the cache lasts five minutes anyway).
 */
import type { HistoryEntry } from "../memory/Memory.js"

export interface Anchored {
  /** The lines to send, oldest first. */
  readonly history: ReadonlyArray<HistoryEntry>
  /** Where the next turn's window should start. */
  readonly anchor: HistoryEntry | undefined
}

const same = (a: HistoryEntry, b: HistoryEntry) => a.role === b.role && a.content === b.content

/** How many lines to read for an anchored window of `keep`. */
export const linesToRead = (keep: number): number => 2 * keep

/**
 * The window over `tail` (the last `linesToRead(keep)` lines): from the
 * anchor when it is still there, else the last `keep` lines from a user line.
 */
export const anchoredWindow = (
  tail: ReadonlyArray<HistoryEntry>,
  keep: number,
  anchor: HistoryEntry | undefined
): Anchored => {
  const found = anchor === undefined ? -1 : tail.findIndex((entry) => same(entry, anchor))
  if (found !== -1) return { history: tail.slice(found), anchor }
  let start = Math.max(0, tail.length - keep)
  while (start < tail.length && tail[start]!.role !== "user") start++
  return { history: tail.slice(start), anchor: tail[start] }
}
