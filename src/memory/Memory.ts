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

    const readSnapshot = (keep: number, files: { readonly summary: string; readonly history: string }) => () => {
      // An unreadable soul or summary costs the persona or the summary, not the answer.
      const soul = SafeFile.read(paths.soul)
      const summary = SafeFile.read(files.summary)
      const tail = withHistory(files.history, SafeFile.flags.read, { lines: [] as ReadonlyArray<string>, oversized: [] as ReadonlyArray<number> }, (fd) =>
        Either.right(readLines(fd, scanTail(fd, keep).offset, fs.fstatSync(fd).size)))
      return Either.map(tail, (tail) => ({ soul, summary, lines: tail.lines, oversized: tail.oversized }))
    }

    const snapshot = (keep: number) =>
      Effect.gen(function*() {
        const read = yield* locked("reading memory", readSnapshot(keep, paths), () => readSnapshot(keep, Layout.readable(paths))())
        const history: Array<HistoryEntry> = []
        const skipped: Array<string> = []
        for (const line of read.lines) {
          const entry = parseLine(line)
          if (Option.isSome(entry)) history.push(entry.value)
          else skipped.push(line)
        }
        yield* reportSkipped(skipped)
        for (const size of read.oversized) {
          yield* Effect.logWarning(`history.jsonl: skipped a ${size}-byte line, too long to be an exchange`)
        }
        const soul = yield* readable("soul.md", read.soul, "the default persona")
        const summary = yield* readable("summary.md", read.summary, "no summary")
        return { soul: soul.length > 0 ? soul : DEFAULT_SOUL, summary, history }
      })

    const writeLines = (entries: ReadonlyArray<HistoryEntry>, options: AppendOptions | undefined) => (fd: number) => {
      const { ino, size } = fs.fstatSync(fd)
      const text = entries.map((entry) => `${encodeEntry(entry)}\n`).join("")
      const key = options?.exchange
      const ledgerText = key === undefined ? Either.right(undefined) : SafeFile.read(paths.ledger)
      if (Either.isLeft(ledgerText)) return Either.left(fromFileError(ledgerText.left))
      const ledger = Ledger.parse(ledgerText.right)
      if (key !== undefined && Ledger.holds(ledger, fd, ino, size, key, text)) return Either.void
      if (key === undefined && options?.unlessLast === true) {
        const last = readRange(fd, scanTail(fd, entries.length).offset, size)
        if (last === text || `${last}\n` === text) return Either.void
      }
      // A file cut short by hand or by a crash must not glue two lines together.
      const prefix = endsWithNewline(fd) ? "" : "\n"
      const bytes = Buffer.from(prefix + text, "utf8")
      if (key !== undefined) {
        // Written ahead: names the range before it is filled, so a crash in between is seen.
        const entry = Ledger.record(ledger, ino, key, size + prefix.length, size + bytes.length)
        const noted = SafeFile.replace(paths.ledger, Ledger.encode(entry))
        if (Either.isLeft(noted)) return Either.left(fromFileError(noted.left))
      }
      const written = SafeFile.appendAll(fd, paths.history, bytes, size)
      if (Either.isLeft(written)) return Either.left(fromFileError(written.left))
      // Our own append keeps the count current: the next check needs no lock.
      if (known !== undefined && known.inode === ino && known.size <= size) known = extendCount(fd, known, size + bytes.length)
      return Either.void
    }

    const append = (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) =>
      locked("appending to history.jsonl", () =>
        SafeFile.withFile(paths.history, SafeFile.flags.append, writeLines(entries, options)).pipe(
          Either.mapLeft((error) => error._tag === "MemoryError" ? error : fromFileError(error))
        )).pipe(
        Effect.tap(() => storeWorked),
        Effect.catchAll(storeFailed)
      )

    // The line count of history as last seen, so the per-turn "is it time to
    // compact?" question costs the bytes appended since, not the file size.
    let known: LineCount | undefined

    // Unchanged since the last count (our own appends keep it current): one
    // stat and no lock. Anything else (another process appended, compacted or
    // replaced the file) is counted under the lock.
    const hasMoreLinesThan = (limit: number) =>
      Effect.suspend(() => {
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

export const make = (directory: string): Effect.Effect<MemoryService> => Effect.flatMap(MemoryDir.make(directory), fromDir)

export const layer: Layer.Layer<Memory, import("effect/ConfigError").ConfigError | MemoryError> = Layer.effect(
  Memory,
  Effect.gen(function*() {
    const directory = yield* MemoryConfig
    yield* ensureWritable(directory)
    return yield* make(directory)
  })
)
