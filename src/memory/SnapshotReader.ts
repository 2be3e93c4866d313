/**
 * The snapshot a turn reads: soul.md, summary.md and the last lines of
 * history.jsonl. What the last snapshot read is kept, each file validated
 * by one lstat(2) on the next message, so a turn that finds nothing changed
 * reads nothing and takes no lock, and a hand edit is still seen then.
 * A soul or summary over its limit (PromptFiles) fails the snapshot with
 * the file named, rather than go into a request the API would refuse.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as FallbackSoul from "./FallbackSoul.js"
import { cachedText, type CachedText, justLeft, look, RACY_MS, type Seen, seenOf, unchanged } from "./FileCache.js"
import { type HistoryEntry, parseLine, readLines, scanTail } from "./HistoryFile.js"
import * as Layout from "./Layout.js"
import type { MemorySnapshot, SnapshotReader, SnapshotReaderOptions } from "./MemorySnapshot.js"
import type * as MemoryDir from "./MemoryDir.js"
import { type MemoryError, withHistory } from "./MemoryDir.js"
import { type PromptRead, readPrompt, textOf } from "./PromptFileCache.js"
import * as SafeFile from "../runtime/SafeFile.js"
import { wellFormed } from "../runtime/WellFormed.js"

export { DEFAULT_SOUL, type MemorySnapshot, type SnapshotReader, type SnapshotReaderOptions } from "./MemorySnapshot.js"

/** Whether every line of a cached window decoded (the usual case). */
const allDecoded = (window: ReadonlyArray<HistoryEntry | undefined>): window is ReadonlyArray<HistoryEntry> =>
  !window.includes(undefined)

/** The last `keep` lines of history, decoded (undefined: a line skipped), as of `seen`. */
interface CachedTail {
  readonly seen: Seen | undefined
  readonly keep: number
  readonly window: ReadonlyArray<HistoryEntry | undefined>
}

export const make = (memoryDir: MemoryDir.MemoryDir, options: SnapshotReaderOptions = {}): SnapshotReader => {
  const { lockedRead, paths } = memoryDir
  // Made when first needed (an empty Set or Map costs 150-190 bytes): an agent with no bad history line,
  // nor a soul or summary of its own, never needs them.
  let reported: Set<string> | undefined

  const reportOnce = (what: string) => (lines: ReadonlyArray<string>) =>
    Effect.forEach(lines, (line) => {
      reported ??= new Set()
      if (reported.has(line) || reported.size > 10_000) return Effect.void
      reported.add(line)
      return Effect.logWarning(`history.jsonl: ${what}: ${line.slice(0, 120)}`)
    }, { discard: true })
  const reportSkipped = reportOnce(`skipped a line that is not {"role","content"}`)
  const reportRepaired = reportOnce("a line holds a lone UTF-16 surrogate (half a character); it is sent with U+FFFD in its place")

  // The last text trimmed, by file: the same cached text comes back turn after turn, and trim copies it.
  let trimmed: Map<string, { readonly raw: string; readonly text: string }> | undefined
  const trimOnce = (name: string, raw: string): string => {
    if (raw === "") return raw
    trimmed ??= new Map()
    const last = trimmed.get(name)
    if (last !== undefined && last.raw === raw) return last.text
    const text = raw.trim()
    trimmed.set(name, { raw, text })
    return text
  }
  // Unreadable costs the persona or the summary, not the answer; over its limit, it fails the snapshot.
  const readable = (name: string, text: PromptRead, instead: string): Effect.Effect<string, MemoryError> =>
    Result.match(text, {
      onFailure: (error) =>
        error._tag === "MemoryError"
          ? Effect.fail(error)
          : Effect.as(Effect.logWarning(`cannot read ${name} (${error.message}); answering with ${instead}`), ""),
      onSuccess: (content) => Effect.succeed(trimOnce(name, content ?? ""))
    })

  // What the last snapshot read, each validated by one lstat(2) on the next
  // message, so a hand edit is seen then. soul.md is written by no one but
  // its editor; summary.md and history.jsonl by a compaction commit too.
  let soulCache: CachedText | undefined
  // A directory made just now: as if a read had found neither summary nor history.
  let summaryCache: CachedText | undefined = options.fresh === true ? { seen: undefined, text: undefined, racy: false } : undefined
  let tailCache: CachedTail | undefined = options.fresh === true ? { seen: undefined, keep: 0, window: [] } : undefined

  const readSoul = () => textOf(paths.soul, soulCache, (read) => soulCache = read)

  interface Read {
    readonly soul: PromptRead
    readonly summary: PromptRead
    readonly lines: ReadonlyArray<string>
    readonly oversized: ReadonlyArray<number>
    /** Decoded lines, already checked: a cache hit. */
    readonly cached?: ReadonlyArray<HistoryEntry | undefined>
  }

  const readSnapshot = (keep: number, files: { readonly summary: string; readonly history: string }, cache: boolean) =>
  (): Result.Result<Read, MemoryError> => {
    // An unreadable soul or summary costs the persona or the summary, not the answer.
    const soul = readSoul()
    const summaryRead = readPrompt(files.summary)
    if (cache && Result.isSuccess(summaryRead)) summaryCache = summaryRead.success
    const summary = Result.map(summaryRead, (read) => read.text)
    const tail = withHistory(files.history, SafeFile.flags.read, { lines: [] as ReadonlyArray<string>, oversized: [] as ReadonlyArray<number>, seen: undefined as Seen | undefined }, (fd, stat) => {
      const read = readLines(fd, scanTail(fd, keep, stat.size).offset, stat.size)
      return Result.succeed({ ...read, seen: seenOf(stat) })
    })
    return Result.map(tail, (tail) => {
      if (cache && tail.oversized.length === 0) {
        tailCache = {
          seen: tail.seen,
          keep,
          window: tail.lines.map((line) => Option.getOrUndefined(parseLine(line)))
        }
        if (tail.seen !== undefined && Date.now() - (tail.seen.mtimeMs ?? 0) < RACY_MS) {
          // Racily clean: trusted by inode and size only until our next append or look.
          tailCache = { ...tailCache, seen: justLeft(tail.seen.ino, tail.seen.size) }
        }
      } else if (cache) {
        tailCache = undefined
      }
      return { soul, summary, lines: tail.lines, oversized: tail.oversized }
    })
  }

  /**
   * Without the lock, from the caches, when summary.md and then
   * history.jsonl are as last read. A compaction commit renames summary
   * before history (Layout.ts), so history unchanged after summary was
   * found unchanged means both are the pair read together; anything else
   * is read again under the lock.
   */
  const fromCache = (keep: number): Option.Option<Read> => {
    let tail = tailCache
    if (tail === undefined || summaryCache === undefined) return Option.none()
    if (tail.keep !== keep) {
      // No history file holds no line, whatever the window: kept for this one, which the next appends fill.
      if (tail.seen !== undefined || tail.window.length > 0) return Option.none()
      tail = { seen: undefined, keep, window: [] }
    }
    const summaryStat = look(paths.summary)
    if (Result.isFailure(summaryStat)) return Option.none()
    let summary = cachedText(summaryCache, summaryStat.success)
    if (Option.isNone(summary) && summaryCache.racy) {
      // Written a moment ago (a compaction just committed it): unchanged
      // if it reads the same, which costs a read, not the lock.
      const again = readPrompt(paths.summary, summaryStat.success !== undefined)
      if (Result.isSuccess(again) && again.success.text === summaryCache.text) {
        summaryCache = again.success
        summary = Option.some(again.success.text)
      }
    }
    if (Option.isNone(summary)) return Option.none()
    const historyStat = look(paths.history)
    if (Result.isFailure(historyStat)) return Option.none()
    const stat = historyStat.success
    if (stat === undefined ? tail.seen !== undefined : tail.seen === undefined || !unchanged(tail.seen, stat)) {
      return Option.none()
    }
    tailCache = tail
    if (stat !== undefined && tail.seen !== undefined && tail.seen.mtimeMs === undefined && Date.now() - stat.mtimeMs >= RACY_MS) {
      tailCache = { ...tail, seen: seenOf(stat) }
    }
    return Option.some({ soul: readSoul(), summary: Result.succeed(summary.value), lines: [], oversized: [], cached: tail.window })
  }

  /** The snapshot, with the host's soul when the agent has none of its own. */
  const withSoul = (soul: string, summary: string, history: ReadonlyArray<HistoryEntry>): Effect.Effect<MemorySnapshot, MemoryError> => {
    if (soul.length > 0) return Effect.succeed({ soul, summary, history })
    const fallback = fallbackSoul()
    return Result.isSuccess(fallback) ? Effect.succeed({ soul: fallback.success, summary, history }) : Effect.fail(fallback.failure)
  }

  /** The snapshot from what was read: nothing to log in the usual case, so no generator or loop over logs. */
  const toSnapshot = (read: Read): Effect.Effect<MemorySnapshot, MemoryError> => {
    const history: Array<HistoryEntry> = []
    const skipped: Array<string> = []
    const repaired: Array<string> = []
    let decoded: ReadonlyArray<HistoryEntry> = history
    if (read.cached !== undefined) {
      // A window never changes once made: shared as it is when every line decoded.
      if (allDecoded(read.cached)) decoded = read.cached
      else for (const entry of read.cached) if (entry !== undefined) history.push(entry)
    } else {
      const onRepaired = (line: string) => void repaired.push(line)
      for (const line of read.lines) {
        const entry = parseLine(line, onRepaired)
        if (Option.isSome(entry)) history.push(entry.value)
        else skipped.push(line)
      }
    }
    const { soul: soulRead, summary: summaryRead } = read
    if (
      skipped.length === 0 && repaired.length === 0 && read.oversized.length === 0 && Result.isSuccess(soulRead) &&
      Result.isSuccess(summaryRead)
    ) {
      const soul = trimOnce("soul.md", soulRead.success ?? "")
      const summary = trimOnce("summary.md", summaryRead.success ?? "")
      return withSoul(soul, summary, decoded)
    }
    return Effect.gen(function*() {
      yield* reportSkipped(skipped)
      yield* reportRepaired(repaired)
      for (const size of read.oversized) {
        yield* Effect.logWarning(`history.jsonl: skipped a ${size}-byte line, too long to be an exchange`)
      }
      const soul = yield* readable("soul.md", soulRead, "the default persona")
      const summary = yield* readable("summary.md", summaryRead, "no summary")
      return yield* withSoul(soul, summary, decoded)
    })
  }

  /**
   * Soul and summary without history (keep 0: what a compaction reads to
   * fold into): with no history to read beside the summary there is no pair
   * to keep whole, so no lock is taken; each file is its cached text when
   * one lstat finds it unchanged. The summary read is not remembered, so the
   * turns' cache still holds the summary read with their window.
   */
  const withoutHistory = (): Read => ({
    soul: readSoul(),
    summary: textOf(paths.summary, summaryCache, () => undefined),
    lines: [],
    oversized: []
  })

  const snapshot = (keep: number): Effect.Effect<MemorySnapshot, MemoryError> =>
    Effect.suspend(() => {
      if (keep === 0) return toSnapshot(withoutHistory())
      const hit = fromCache(keep)
      return Option.isSome(hit)
        ? toSnapshot(hit.value)
        : Effect.flatMap(
          lockedRead("reading memory", readSnapshot(keep, paths, true), () => readSnapshot(keep, Layout.readable(paths), false)()),
          toSnapshot
        )
    })

  // The persona for an agent without a soul.md of its own (FallbackSoul).
  const fallbackSoul = options.fallbackSoul ?? FallbackSoul.reader(options.fallbackSoulFile)

  const appended = (ino: number, size: number, end: number, entries: ReadonlyArray<HistoryEntry>) => {
    // The snapshot's tail, when it was history as found here.
    const tail = tailCache
    // History absent when read and empty when appended to (an agent's first exchange) holds just these entries.
    const same = tail !== undefined && (tail.seen === undefined ? size === 0 : tail.seen.ino === ino && tail.seen.size === size)
    if (tail !== undefined && same) {
      // One copy of the window per append: the kept end of the old one, then the new entries.
      const from = Math.max(0, tail.window.length + entries.length - tail.keep)
      const window = tail.window.slice(Math.min(from, tail.window.length))
      for (let i = Math.max(0, from - tail.window.length); i < entries.length; i++) window.push(entries[i])
      tailCache = {
        seen: justLeft(ino, end),
        keep: tail.keep,
        window
      }
    } else {
      tailCache = undefined
    }
  }

  const committed = (
    oldHistory: { readonly inode: number; readonly size: number },
    history: { readonly inode: number; readonly size: number; readonly lines: number },
    summary: string
  ) => {
    const tail = tailCache
    tailCache = undefined
    if (tail?.seen === undefined || tail.seen.ino !== oldHistory.inode || tail.seen.size !== oldHistory.size) return
    // summary.md as renamed in (its change time is the rename's): trusted by status like one read.
    const stat = look(paths.summary)
    if (Result.isFailure(stat) || stat.success === undefined) return
    // As summary.md holds it: its UTF-8 has U+FFFD for a lone surrogate of the model's answer.
    summaryCache = { seen: seenOf(stat.success), text: wellFormed(summary), racy: Date.now() - stat.success.mtimeMs < RACY_MS }
    tailCache = {
      // Just written: trusted by inode and size, as after an append.
      seen: justLeft(history.inode, history.size),
      keep: tail.keep,
      window: tail.window.length > history.lines ? tail.window.slice(tail.window.length - history.lines) : tail.window
    }
  }

  const reset = () => {
    summaryCache = undefined
    tailCache = undefined
  }

  return { snapshot, appended, committed, reset }
}

