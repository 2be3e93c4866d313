/**
 * The agent's memory on disk, in the original's format: soul.md (persona),
 * summary.md (written only by compaction) and history.jsonl (one
 * {"role","content"} per line). This is the history store a turn uses:
 * read the persona, summary and recent history, append an exchange, and
 * tell whether compaction is due. Every write of history happens under the
 * directory's cross-process lock (MemoryDir.ts), so `planckclaw compact` in
 * another process never races a turn; the compaction's side of the store is
 * FoldStore.ts. Memory files are opened without following links and only if
 * they are regular files of this user. A write that cannot land whole (a
 * full disk) is cut back and reported once; reading never needs a new file,
 * so turns are answered on a full disk.
 */
import * as fs from "node:fs"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  encodeEntry,
  endsWithNewline,
  extendCount,
  type HistoryEntry,
  type LineCount,
  parseLine,
  readLines,
  readRange,
  scanTail
} from "./HistoryFile.js"
import * as Layout from "./Layout.js"
import * as Ledger from "./Ledger.js"
import * as MemoryDir from "./MemoryDir.js"
import { ensureWritable, fromFileError, MemoryConfig, type MemoryError, withHistory } from "./MemoryDir.js"
import * as SafeFile from "./SafeFile.js"

export type { HistoryEntry } from "./HistoryFile.js"
export { CompactionBusy, ensureWritable, MemoryConfig, MemoryError } from "./MemoryDir.js"

export const DEFAULT_SOUL = "You are a helpful personal assistant."

/** A history line decoded, or none when it is not exactly {"role","content"}. */
export const decodeLine: (line: string) => Option.Option<HistoryEntry> = parseLine

/** A history line as the original agent writes it (without its newline). */
export const encodeLine: (entry: HistoryEntry) => string = encodeEntry

export interface MemorySnapshot {
  readonly soul: string
  readonly summary: string
  /** The last lines of history that decoded, oldest first. */
  readonly history: ReadonlyArray<HistoryEntry>
}

export interface AppendOptions {
  /**
   * The journal's key of this exchange: nothing is written when history
   * already holds this very exchange (a replay after a crash), however
   * alike its text is to others.
   */
  readonly exchange?: string
  /** For an exchange journaled without a key (an older journal): nothing is written when history ends with these lines. */
  readonly unlessLast?: boolean
}

export interface MemoryService {
  readonly directory: string
  /** The directory with its write lock, shared with the compaction's FoldStore so both take turns. */
  readonly memoryDir: MemoryDir.MemoryDir
  readonly snapshot: (keep: number) => Effect.Effect<MemorySnapshot, MemoryError>
  /** Appends lines to history: all of them, or nothing. */
  readonly append: (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) => Effect.Effect<void, MemoryError>
  /** Whether the last write to memory failed (a full disk): compaction waits until one succeeds. */
  readonly storageFailing: Effect.Effect<boolean>
  readonly hasMoreLinesThan: (limit: number) => Effect.Effect<boolean, MemoryError>
}

export class Memory extends Context.Tag("planckclaw/Memory")<Memory, MemoryService>() {}

/**
 * A file as last seen: inode, size and times. Times are unknown right after
 * this process's own write (write(2) does not return them); the next look
 * that finds the inode and size this process left takes them.
 */
interface Seen {
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number | undefined
  readonly ctimeMs: number | undefined
}

const seenOf = (stat: fs.Stats): Seen => ({ ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs })

const unchanged = (seen: Seen, stat: fs.Stats): boolean =>
  seen.ino === stat.ino && seen.size === stat.size &&
  (seen.mtimeMs === undefined || (seen.mtimeMs === stat.mtimeMs && seen.ctimeMs === stat.ctimeMs))

/**
 * A file modified this close to when it was read may be modified again
 * within the same timestamp tick without its status changing: its cached
 * content is not trusted by status until it is older (git's "racily
 * clean"). File times come from the kernel's coarse clock, at worst one
 * tick (10 ms at HZ=100) behind the real-time clock; 100 ms is ten ticks.
 */
const RACY_MS = 100

/** lstat(2) of a memory file: undefined when absent; a link, a non-regular file or someone else's is refused. */
const look = (file: string): Either.Either<fs.Stats | undefined, SafeFile.MemoryFileError> => {
  const stat = Either.try(() => fs.lstatSync(file, { throwIfNoEntry: false }))
  if (Either.isLeft(stat)) return Either.left(SafeFile.failed(file, stat.left))
  if (stat.right === undefined) return Either.right(undefined)
  const refused = SafeFile.refusal(file, stat.right)
  return refused === undefined ? Either.right(stat.right) : Either.left(refused)
}

/** A hand-editable text file (soul.md, summary.md) read again only when its status changed. */
interface CachedText {
  readonly seen: Seen | undefined
  readonly text: string | undefined
  /** Read less than RACY_MS after its last modification: read again next time. */
  readonly racy: boolean
}

const readText = (file: string): Either.Either<CachedText, SafeFile.MemoryFileError> => {
  const opened = SafeFile.openWithStat(file, SafeFile.flags.read)
  if (Either.isLeft(opened)) {
    return opened.left._tag === "MemoryFileFailed" && opened.left.code === "ENOENT"
      ? Either.right({ seen: undefined, text: undefined, racy: false })
      : Either.left(opened.left)
  }
  const { fd, stat } = opened.right
  const text = Either.try({ try: () => fs.readFileSync(fd, "utf8"), catch: (error) => SafeFile.failed(file, error) })
  Either.try(() => fs.closeSync(fd))
  return Either.map(text, (text) => ({ seen: seenOf(stat), text, racy: Date.now() - stat.mtimeMs < RACY_MS }))
}

/** The cached text when `stat` (undefined: absent) says the file has not changed since it was read. */
const cachedText = (cache: CachedText | undefined, stat: fs.Stats | undefined): Option.Option<string | undefined> => {
  if (cache === undefined || cache.racy) return Option.none()
  if (stat === undefined) return cache.seen === undefined ? Option.some(undefined) : Option.none()
  return cache.seen !== undefined && unchanged(cache.seen, stat) ? Option.some(cache.text) : Option.none()
}

/** The last `keep` lines of history, decoded (undefined: a line skipped), as of `seen`. */
interface CachedTail {
  readonly seen: Seen | undefined
  readonly keep: number
  readonly window: ReadonlyArray<HistoryEntry | undefined>
}

/** The history store on a memory directory; FoldStore.make on the same `memoryDir` shares its lock. */
export const fromDir = (memoryDir: MemoryDir.MemoryDir): Effect.Effect<MemoryService> =>
  Effect.sync(() => {
    const { directory, locked, paths, storeFailed, storeWorked } = memoryDir
    const reported = new Set<string>()

    const reportSkipped = (lines: ReadonlyArray<string>) =>
      Effect.forEach(lines, (line) => {
        if (reported.has(line) || reported.size > 10_000) return Effect.void
        reported.add(line)
        return Effect.logWarning(`history.jsonl: skipped a line that is not {"role","content"}: ${line.slice(0, 120)}`)
      }, { discard: true })

    const readable = (name: string, text: Either.Either<string | undefined, SafeFile.MemoryFileError>, instead: string) =>
      Either.match(text, {
        onLeft: (error) => Effect.as(Effect.logWarning(`cannot read ${name} (${error.message}); answering with ${instead}`), ""),
        onRight: (content) => Effect.succeed((content ?? "").trim())
      })

    // What the last snapshot read, each validated by one lstat(2) on the next
    // message, so a hand edit is seen then. soul.md is written by no one but
    // its editor; summary.md and history.jsonl by a compaction commit too.
    let soulCache: CachedText | undefined
    let summaryCache: CachedText | undefined
    let tailCache: CachedTail | undefined

    const textOf = (
      file: string,
      cache: CachedText | undefined,
      remember: (cache: CachedText) => void
    ): Either.Either<string | undefined, SafeFile.MemoryFileError> => {
      const stat = look(file)
      if (Either.isLeft(stat)) return Either.left(stat.left)
      const cached = cachedText(cache, stat.right)
      if (Option.isSome(cached)) return Either.right(cached.value)
      return Either.map(readText(file), (read) => {
        remember(read)
        return read.text
      })
    }

    const readSoul = () => textOf(paths.soul, soulCache, (read) => soulCache = read)

    interface Read {
      readonly soul: Either.Either<string | undefined, SafeFile.MemoryFileError>
      readonly summary: Either.Either<string | undefined, SafeFile.MemoryFileError>
      readonly lines: ReadonlyArray<string>
      readonly oversized: ReadonlyArray<number>
      /** Decoded lines, already checked: a cache hit. */
      readonly cached?: ReadonlyArray<HistoryEntry | undefined>
    }

    const readSnapshot = (keep: number, files: { readonly summary: string; readonly history: string }, cache: boolean) =>
    (): Either.Either<Read, MemoryError> => {
      // An unreadable soul or summary costs the persona or the summary, not the answer.
      const soul = readSoul()
      const summaryRead = readText(files.summary)
      if (cache && Either.isRight(summaryRead)) summaryCache = summaryRead.right
      const summary = Either.map(summaryRead, (read) => read.text)
      const tail = withHistory(files.history, SafeFile.flags.read, { lines: [] as ReadonlyArray<string>, oversized: [] as ReadonlyArray<number>, seen: undefined as Seen | undefined }, (fd) => {
        const stat = fs.fstatSync(fd)
        const read = readLines(fd, scanTail(fd, keep).offset, stat.size)
        return Either.right({ ...read, seen: seenOf(stat) })
      })
      return Either.map(tail, (tail) => {
        if (cache && tail.oversized.length === 0) {
          tailCache = {
            seen: tail.seen,
            keep,
            window: tail.lines.map((line) => Option.getOrUndefined(parseLine(line)))
          }
          if (tail.seen !== undefined && Date.now() - (tail.seen.mtimeMs ?? 0) < RACY_MS) {
            // Racily clean: trusted by inode and size only until our next append or look.
            tailCache = { ...tailCache, seen: { ...tail.seen, mtimeMs: undefined, ctimeMs: undefined } }
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
      const tail = tailCache
      if (tail === undefined || tail.keep !== keep || summaryCache === undefined) return Option.none()
      const summaryStat = look(paths.summary)
      if (Either.isLeft(summaryStat)) return Option.none()
      let summary = cachedText(summaryCache, summaryStat.right)
      if (Option.isNone(summary) && summaryCache.racy) {
        // Written a moment ago (a compaction just committed it): unchanged
        // if it reads the same, which costs a read, not the lock.
        const again = readText(paths.summary)
        if (Either.isRight(again) && again.right.text === summaryCache.text) {
          summaryCache = again.right
          summary = Option.some(again.right.text)
        }
      }
      if (Option.isNone(summary)) return Option.none()
      const historyStat = look(paths.history)
      if (Either.isLeft(historyStat)) return Option.none()
      const stat = historyStat.right
      if (stat === undefined ? tail.seen !== undefined : tail.seen === undefined || !unchanged(tail.seen, stat)) {
        return Option.none()
      }
      if (stat !== undefined && tail.seen !== undefined && tail.seen.mtimeMs === undefined && Date.now() - stat.mtimeMs >= RACY_MS) {
        tailCache = { ...tail, seen: seenOf(stat) }
      }
      return Option.some({ soul: readSoul(), summary: Either.right(summary.value), lines: [], oversized: [], cached: tail.window })
    }

    const snapshot = (keep: number) =>
      Effect.gen(function*() {
        const hit = fromCache(keep)
        const read = Option.isSome(hit)
          ? hit.value
          : yield* locked("reading memory", readSnapshot(keep, paths, true), () => readSnapshot(keep, Layout.readable(paths), false)())
        const history: Array<HistoryEntry> = []
        const skipped: Array<string> = []
        if (read.cached !== undefined) {
          for (const entry of read.cached) if (entry !== undefined) history.push(entry)
        } else {
          for (const line of read.lines) {
            const entry = parseLine(line)
            if (Option.isSome(entry)) history.push(entry.value)
            else skipped.push(line)
          }
        }
        yield* reportSkipped(skipped)
        for (const size of read.oversized) {
          yield* Effect.logWarning(`history.jsonl: skipped a ${size}-byte line, too long to be an exchange`)
        }
        const soul = yield* readable("soul.md", read.soul, "the default persona")
        const summary = yield* readable("summary.md", read.summary, "no summary")
        return { soul: soul.length > 0 ? soul : DEFAULT_SOUL, summary, history }
      })

    // history.jsonl and the ledger, held open for appending between turns
    // (O_APPEND); each append checks by lstat that the path still names the
    // held file (a compaction renames new files in place).
    let historyFd: { readonly fd: number; readonly ino: number } | undefined
    let ledgerFd: { readonly fd: number; readonly ino: number } | undefined
    // The ledger as this process last read or wrote it.
    let ledgerCache: { readonly seen: Seen; readonly ledger: Ledger.Ledger; readonly endsWithNewline: boolean; readonly lines: number } | undefined
    // history.jsonl as this process left it after its last append.
    let lastEnd: { readonly ino: number; readonly size: number } | undefined

    const closeHeld = (held: { readonly fd: number } | undefined) => {
      if (held !== undefined) Either.try(() => fs.closeSync(held.fd))
    }

    /** The held descriptor of `file` if `stat` is its file, else `file` opened anew (and held). */
    const heldFor = (
      file: string,
      held: { readonly fd: number; readonly ino: number } | undefined,
      stat: fs.Stats | undefined
    ): Either.Either<{ readonly fd: number; readonly ino: number; readonly stat: fs.Stats | undefined }, SafeFile.MemoryFileError> => {
      if (held !== undefined && stat !== undefined && stat.ino === held.ino) return Either.right({ ...held, stat })
      closeHeld(held)
      return Either.map(SafeFile.openWithStat(file, SafeFile.flags.append), ({ fd, stat }) => ({ fd, ino: stat.ino, stat }))
    }

    /** The ledger, read again only when its status is not what this process left. */
    const currentLedger = (): Either.Either<{ readonly ledger: Ledger.Ledger; readonly stat: fs.Stats | undefined }, SafeFile.MemoryFileError> =>
      Either.flatMap(look(paths.ledger), (stat) => {
        if (stat === undefined) {
          ledgerCache = undefined
          return Either.right({ ledger: Ledger.empty, stat })
        }
        if (ledgerCache !== undefined && unchanged(ledgerCache.seen, stat)) {
          if (ledgerCache.seen.mtimeMs === undefined) ledgerCache = { ...ledgerCache, seen: seenOf(stat) }
          return Either.right({ ledger: ledgerCache.ledger, stat })
        }
        return Either.map(readText(paths.ledger), (read) => {
          const text = read.text ?? ""
          const ledger = Ledger.parse(read.text)
          ledgerCache = read.seen === undefined ? undefined : {
            seen: read.racy ? { ...read.seen, mtimeMs: undefined, ctimeMs: undefined } : read.seen,
            ledger,
            endsWithNewline: text.length === 0 || text.endsWith("\n"),
            lines: text.split("\n").length
          }
          return { ledger, stat: read.seen === undefined ? undefined : stat }
        })
      })

    /** Names [start, end) of history for `key` before it is written: one appended line, or the whole ledger anew now and then. */
    const noteAhead = (
      ledger: Ledger.Ledger,
      stat: fs.Stats | undefined,
      inode: number,
      key: string,
      start: number,
      end: number
    ): Either.Either<void, SafeFile.MemoryFileError> => {
      const next = Ledger.record(ledger, inode, key, start, end)
      const cache = ledgerCache
      if (cache === undefined || stat === undefined || cache.lines > 2 * Ledger.KEEP || ledger.inode !== inode) {
        // Absent, grown long, or about another history file: written whole, through a rename.
        closeHeld(ledgerFd)
        ledgerFd = undefined
        ledgerCache = undefined
        // Read back (and held) at the next append: the rename gave it a new inode.
        return SafeFile.replace(paths.ledger, Ledger.encode(next))
      }
      const held = heldFor(paths.ledger, ledgerFd, stat)
      if (Either.isLeft(held)) {
        ledgerFd = undefined
        return Either.left(held.left)
      }
      ledgerFd = { fd: held.right.fd, ino: held.right.ino }
      const size = held.right.stat?.size ?? stat.size
      const bytes = Buffer.from(`${cache.endsWithNewline ? "" : "\n"}${Ledger.encodeRecord(inode, key, start, end)}`, "utf8")
      const written = SafeFile.appendAll(held.right.fd, paths.ledger, bytes, size)
      ledgerCache = Either.isRight(written)
        ? {
          seen: { ino: held.right.ino, size: size + bytes.length, mtimeMs: undefined, ctimeMs: undefined },
          ledger: next,
          endsWithNewline: true,
          lines: cache.lines + 1
        }
        : undefined
      return written
    }

    const writeLines = (entries: ReadonlyArray<HistoryEntry>, options: AppendOptions | undefined) =>
    (): Either.Either<void, MemoryError> => {
      const historyStat = look(paths.history)
      if (Either.isLeft(historyStat)) return Either.left(fromFileError(historyStat.left))
      const held = heldFor(paths.history, historyFd, historyStat.right)
      if (Either.isLeft(held)) {
        historyFd = undefined
        return Either.left(fromFileError(held.left))
      }
      const fd = held.right.fd
      historyFd = { fd, ino: held.right.ino }
      const ino = held.right.ino
      const size = held.right.stat?.size ?? 0
      const text = entries.map((entry) => `${encodeEntry(entry)}\n`).join("")
      const key = options?.exchange
      const current = key === undefined ? Either.right(undefined) : currentLedger()
      if (Either.isLeft(current)) return Either.left(fromFileError(current.left))
      const ledger = current.right?.ledger ?? Ledger.empty
      if (key !== undefined && Ledger.holds(ledger, fd, ino, size, key, text)) return Either.void
      if (key === undefined && options?.unlessLast === true) {
        const last = readRange(fd, scanTail(fd, entries.length).offset, size)
        if (last === text || `${last}\n` === text) return Either.void
      }
      // A file cut short by hand or by a crash must not glue two lines
      // together: known when history is as this process left it, else read.
      const ownEnd = lastEnd !== undefined && lastEnd.ino === ino && lastEnd.size === size
      const prefix = size === 0 || ownEnd || endsWithNewlineAt(fd, size) ? "" : "\n"
      const bytes = Buffer.from(prefix + text, "utf8")
      if (key !== undefined) {
        // Written ahead: names the range before it is filled, so a crash in between is seen.
        const noted = noteAhead(ledger, current.right?.stat, ino, key, size + prefix.length, size + bytes.length)
        if (Either.isLeft(noted)) return Either.left(fromFileError(noted.left))
      }
      const written = SafeFile.appendAll(fd, paths.history, bytes, size)
      if (Either.isLeft(written)) return Either.left(fromFileError(written.left))
      const end = size + bytes.length
      lastEnd = { ino, size: end }
      // Our own append keeps the count current: the next check needs no lock.
      if (known !== undefined && known.inode === ino && known.size === size) {
        // The lines just written, counted from what was written, not read back.
        known = { inode: ino, size: end, lines: known.lines + entries.length, endsWithNewline: true }
        appended = true
      } else if (known !== undefined && known.inode === ino && known.size < size) {
        known = extendCount(fd, known, end)
        appended = true
      }
      // And the snapshot's tail, when it was history as found here.
      const tail = tailCache
      if (tail !== undefined && tail.seen !== undefined && tail.seen.ino === ino && tail.seen.size === size) {
        const window = [...tail.window, ...entries]
        tailCache = {
          seen: { ino, size: end, mtimeMs: undefined, ctimeMs: undefined },
          keep: tail.keep,
          window: window.slice(Math.max(0, window.length - tail.keep))
        }
      } else {
        tailCache = undefined
      }
      return Either.void
    }

    const append = (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) =>
      locked("appending to history.jsonl", writeLines(entries, options)).pipe(
        Effect.tap(() => storeWorked),
        Effect.catchAll(storeFailed)
      )

    // The line count of history as last seen, so the per-turn "is it time to
    // compact?" question costs the bytes appended since, not the file size.
    let known: LineCount | undefined
    // Set by an append that left `known` current, under the lock: the next
    // question is answered from it without a stat (a compaction or append by
    // another process in between is seen at the question after).
    let appended = false

    // Unchanged since the last count (our own appends keep it current): one
    // stat and no lock. Anything else (another process appended, compacted or
    // replaced the file) is counted under the lock.
    const hasMoreLinesThan = (limit: number) =>
      Effect.suspend(() => {
        if (appended && known !== undefined) {
          appended = false
          return Effect.succeed(known.lines > limit)
        }
        const stat = Either.try(() => fs.statSync(paths.history, { throwIfNoEntry: false }))
        return Either.isRight(stat) && stat.right !== undefined && known !== undefined &&
            known.inode === stat.right.ino && known.size === stat.right.size
          ? Effect.succeed(known.lines > limit)
          : countLines(limit)
      })

    const count = (limit: number, file: string) => () =>
      withHistory(file, SafeFile.flags.read, false, (fd) => {
        const stat = fs.fstatSync(fd)
        if (known !== undefined && known.inode === stat.ino && known.size <= stat.size) {
          known = extendCount(fd, known, stat.size)
          return Either.right(known.lines > limit)
        }
        // Unknown or rewritten file: scan back at most limit + 1 lines; reaching
        // the start means the count is exact and worth keeping.
        const tail = scanTail(fd, limit + 1)
        if (tail.count > limit) return Either.right(true)
        known = { inode: stat.ino, size: stat.size, lines: tail.count, endsWithNewline: endsWithNewline(fd) }
        return Either.right(false)
      })

    const countLines = (limit: number) =>
      locked("counting history lines", count(limit, paths.history), count(limit, Layout.readable(paths).history))

    return {
      directory,
      memoryDir,
      snapshot,
      append,
      storageFailing: memoryDir.storageFailing,
      hasMoreLinesThan
    } satisfies MemoryService
  })

/** Whether history, `size` bytes long, is empty or ends with a newline: one pread(2). */
const endsWithNewlineAt = (fd: number, size: number): boolean => {
  if (size === 0) return true
  const last = Buffer.allocUnsafe(1)
  return fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a
}

export const make = (directory: string): Effect.Effect<MemoryService> => Effect.flatMap(MemoryDir.make(directory), fromDir)

export const layer: Layer.Layer<Memory, import("effect/ConfigError").ConfigError | MemoryError> = Layer.effect(
  Memory,
  Effect.gen(function*() {
    const directory = yield* MemoryConfig
    yield* ensureWritable(directory)
    return yield* make(directory)
  })
)
