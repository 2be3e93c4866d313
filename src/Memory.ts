/**
 * The agent's memory on disk, in the original's format: soul.md (persona),
 * summary.md (written only by compaction) and history.jsonl (one
 * {"role","content"} per line). Every read and write of history happens
 * under a cross-process lock, so `planckclaw compact` in another process
 * never races a turn; a compaction commits both files through a journal so a
 * kill at any instant leaves either the old pair or the new pair.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as FileLock from "./memory/FileLock.js"
import {
  describeFsError,
  encodeEntry,
  endsWithNewline,
  type HistoryEntry,
  parseLine,
  readLines,
  readRange,
  scanTail,
  splitLines,
  streamLines
} from "./memory/HistoryFile.js"

export type { HistoryEntry } from "./memory/HistoryFile.js"

export const DEFAULT_SOUL = "You are a helpful personal assistant."

export class MemoryError extends Data.TaggedError("MemoryError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Another compaction holds the memory directory. */
export class CompactionBusy extends Data.TaggedError("CompactionBusy")<{
  readonly ownerPid: number
}> {}

export interface MemorySnapshot {
  readonly soul: string
  readonly summary: string
  /** The last lines of history that decoded, oldest first. */
  readonly history: ReadonlyArray<HistoryEntry>
}

/** History's line count at a given inode and size. */
interface LineCount {
  readonly inode: number
  readonly size: number
  readonly lines: number
  readonly endsWithNewline: boolean
}

/** Counts the lines appended to a file since `count` was taken. */
const extendCount = (fd: number, count: LineCount, size: number): LineCount => {
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

/** What a compaction will fold: everything before `splitOffset`. */
export interface FoldPlan {
  readonly splitOffset: number
  readonly inode: number
}

export interface FoldResult {
  /** Lines left in history after the commit (the kept tail plus any appended meanwhile). */
  readonly kept: number
  /** Size of the summary.md written. */
  readonly summaryBytes: number
}

export interface MemoryService {
  readonly directory: string
  readonly snapshot: (keep: number) => Effect.Effect<MemorySnapshot, MemoryError>
  /**
   * Appends lines to history. With `unlessLast`, nothing is written when
   * history already ends with exactly these lines (a replay after a crash).
   */
  readonly append: (
    entries: ReadonlyArray<HistoryEntry>,
    options?: { readonly unlessLast?: boolean }
  ) => Effect.Effect<void, MemoryError>
  readonly hasMoreLinesThan: (limit: number) => Effect.Effect<boolean, MemoryError>
  /** Runs `effect` as the only compaction on this directory, across processes. */
  readonly exclusiveCompaction: <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | MemoryError | CompactionBusy, R>
  /** The fold for a history keeping its last `keep` lines; none when nothing is older. */
  readonly planFold: (keep: number) => Effect.Effect<Option.Option<FoldPlan>, MemoryError>
  readonly linesToFold: (plan: FoldPlan) => Stream.Stream<string, MemoryError>
  readonly commitFold: (plan: FoldPlan, summary: string) => Effect.Effect<FoldResult, MemoryError>
}

export class Memory extends Context.Tag("planckclaw/Memory")<Memory, MemoryService>() {}

export const MemoryConfig = Config.string("PLANCKCLAW_DIR").pipe(
  Config.withDefault("./memory"),
  Config.map((dir) => path.resolve(dir))
)

const files = (directory: string) => ({
  soul: path.join(directory, "soul.md"),
  summary: path.join(directory, "summary.md"),
  history: path.join(directory, "history.jsonl"),
  writeLock: path.join(directory, ".planckclaw-write.lock"),
  compactionLock: path.join(directory, ".planckclaw-compact.lock"),
  journal: path.join(directory, ".compaction-commit"),
  nextSummary: path.join(directory, ".summary.md.next"),
  nextHistory: path.join(directory, ".history.jsonl.next")
})

const fsEffect = <A>(what: string, run: () => A): Effect.Effect<A, MemoryError> =>
  Effect.try({ try: run, catch: (cause) => new MemoryError({ message: `${what}: ${describeFsError(cause)}`, cause }) })

/** Reads a text file; a missing file is empty. */
const readOptional = (file: string): string => fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""

const writeDurably = (file: string, content: string | Buffer) => {
  const fd = fs.openSync(file, "w", 0o600)
  try {
    fs.writeFileSync(fd, content)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

const syncDirectory = (directory: string) => {
  const fd = fs.openSync(directory, "r")
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

const renameIfPresent = (from: string, to: string) => {
  if (fs.existsSync(from)) fs.renameSync(from, to)
}

/**
 * Finishes or discards a compaction commit interrupted by a crash. With the
 * journal present the new files are complete and are moved into place;
 * without it they may be partial and are removed.
 */
const recover = (paths: ReturnType<typeof files>) => {
  if (fs.existsSync(paths.journal)) {
    renameIfPresent(paths.nextSummary, paths.summary)
    renameIfPresent(paths.nextHistory, paths.history)
    fs.unlinkSync(paths.journal)
  } else {
    for (const leftover of [paths.nextSummary, paths.nextHistory]) {
      if (fs.existsSync(leftover)) fs.unlinkSync(leftover)
    }
  }
}

const withFd = <A>(file: string, flags: string, use: (fd: number) => A): A => {
  const fd = fs.openSync(file, flags, 0o600)
  try {
    return use(fd)
  } finally {
    fs.closeSync(fd)
  }
}

export const make = (directory: string): Effect.Effect<MemoryService> =>
  Effect.gen(function*() {
    const paths = files(directory)
    // File locks identify owners by pid, so fibers of this process must take
    // turns before touching them.
    const writeMutex = yield* Effect.makeSemaphore(1)
    const compactionMutex = yield* Effect.makeSemaphore(1)
    const reported = new Set<string>()

    const locked = <A>(what: string, run: () => A): Effect.Effect<A, MemoryError> =>
      writeMutex.withPermits(1)(Effect.suspend(() => {
        let taken = FileLock.tryTakeSync(paths.writeLock)
        if (Either.isLeft(taken) && taken.left._tag === "LockFailed" && !fs.existsSync(directory)) {
          // Removed under a running agent (by hand): make it again rather than fail every turn.
          Either.try(() => makeDirectories(directory))
          taken = FileLock.tryTakeSync(paths.writeLock)
        }
        // The usual case, a free lock: take it, work and release in one synchronous step.
        if (Either.isRight(taken)) {
          return fsEffect(what, () => {
            try {
              recover(paths)
              return run()
            } finally {
              FileLock.releaseSync(paths.writeLock)
            }
          })
        }
        return lockedWaiting(what, run)
      }))

    const lockedWaiting = <A>(what: string, run: () => A): Effect.Effect<A, MemoryError> =>
        Effect.scoped(
          FileLock.holdWaiting(paths.writeLock).pipe(
            Effect.mapError((error) =>
              new MemoryError({
                message: error._tag === "LockHeld"
                  ? `${directory} stayed locked by process ${error.ownerPid}`
                  : `cannot lock ${directory}: ${error.message}`
              })
            ),
            Effect.zipRight(fsEffect(what, () => {
              recover(paths)
              return run()
            }))
          )
        )

    const reportSkipped = (lines: ReadonlyArray<string>) =>
      Effect.forEach(lines, (line) => {
        if (reported.has(line) || reported.size > 10_000) return Effect.void
        reported.add(line)
        return Effect.logWarning(`history.jsonl: skipped a line that is not {"role","content"}: ${line.slice(0, 120)}`)
      }, { discard: true })

    const readable = (name: string, text: Either.Either<string, unknown>, instead: string) =>
      Either.match(text, {
        onLeft: (error) =>
          Effect.as(Effect.logWarning(`cannot read ${name} (${describeFsError(error)}); answering with ${instead}`), ""),
        onRight: Effect.succeed
      })

    const snapshot = (keep: number) =>
      Effect.gen(function*() {
        const read = yield* locked("reading memory", () => {
          // An unreadable soul or summary costs the persona or the summary, not the answer.
          const soul = Either.try(() => readOptional(paths.soul).trim())
          const summary = Either.try(() => readOptional(paths.summary).trim())
          const tail = fs.existsSync(paths.history)
            ? withFd(paths.history, "r", (fd) => readLines(fd, scanTail(fd, keep).offset, fs.fstatSync(fd).size))
            : { lines: [], oversized: [] }
          return { soul, summary, lines: tail.lines, oversized: tail.oversized }
        })
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

    const append = (entries: ReadonlyArray<HistoryEntry>, options?: { readonly unlessLast?: boolean }) =>
      locked("appending to history.jsonl", () =>
        withFd(paths.history, "a+", (fd) => {
          const text = entries.map((entry) => `${encodeEntry(entry)}\n`).join("")
          if (options?.unlessLast === true) {
            const tail = scanTail(fd, entries.length)
            const last = readRange(fd, tail.offset, fs.fstatSync(fd).size)
            if (last === text || `${last}\n` === text) return
          }
          // A file cut short by hand or by a crash must not glue two lines together.
          fs.writeSync(fd, endsWithNewline(fd) ? text : `\n${text}`)
          // Our own append keeps the count current: the next check needs no lock.
          if (known !== undefined) {
            const { ino, size } = fs.fstatSync(fd)
            if (known.inode === ino && known.size <= size) known = extendCount(fd, known, size)
          }
        }))

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

    const countLines = (limit: number) =>
      locked("counting history lines", () => {
        if (!fs.existsSync(paths.history)) return false
        return withFd(paths.history, "r", (fd) => {
          const stat = fs.fstatSync(fd)
          if (known !== undefined && known.inode === stat.ino && known.size <= stat.size) {
            known = extendCount(fd, known, stat.size)
            return known.lines > limit
          }
          // Unknown or rewritten file: scan back at most limit + 1 lines; reaching
          // the start means the count is exact and worth keeping.
          const tail = scanTail(fd, limit + 1)
          if (tail.count > limit) return true
          known = { inode: stat.ino, size: stat.size, lines: tail.count, endsWithNewline: endsWithNewline(fd) }
          return false
        })
      })

    const exclusiveCompaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      compactionMutex.withPermitsIfAvailable(1)(
        Effect.scoped(
          FileLock.hold(paths.compactionLock).pipe(
            Effect.catchTags({
              LockHeld: (error) => new CompactionBusy({ ownerPid: error.ownerPid }),
              LockFailed: (error) => new MemoryError({ message: `cannot lock ${directory}: ${error.message}` })
            }),
            Effect.zipRight(effect)
          )
        )
      ).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new CompactionBusy({ ownerPid: process.pid })),
          onSome: Effect.succeed
        }))
      )

    const planFold = (keep: number) =>
      locked("planning compaction", () => {
        if (!fs.existsSync(paths.history)) return Option.none<FoldPlan>()
        return withFd(paths.history, "r", (fd) => {
          const tail = scanTail(fd, keep)
          const inode = fs.fstatSync(fd).ino
          // keep = 0 folds everything; otherwise a short history has nothing older.
          const older = keep === 0 ? tail.offset > 0 : tail.count === keep && tail.offset > 0
          return older ? Option.some({ splitOffset: tail.offset, inode }) : Option.none<FoldPlan>()
        })
      })

    const linesToFold = (plan: FoldPlan) =>
      streamLines(paths.history, plan.splitOffset).pipe(
        Stream.mapError((cause) => new MemoryError({ message: `reading history.jsonl: ${cause.message}`, cause }))
      )

    const commitFold = (plan: FoldPlan, summary: string) =>
      locked("committing compaction", (): Either.Either<FoldResult, string> => {
        const rest = withFd(paths.history, "r", (fd): Either.Either<Buffer, string> => {
          const stat = fs.fstatSync(fd)
          if (stat.ino !== plan.inode || stat.size < plan.splitOffset) {
            return Either.left("history.jsonl was replaced or shortened during compaction; nothing changed")
          }
          const length = stat.size - plan.splitOffset
          const buffer = Buffer.allocUnsafe(length)
          fs.readSync(fd, buffer, 0, length, plan.splitOffset)
          return Either.right(buffer)
        })
        if (Either.isLeft(rest)) return Either.left(rest.left)
        const summaryFile = summary.length === 0 || summary.endsWith("\n") ? summary : `${summary}\n`
        writeDurably(paths.nextSummary, summaryFile)
        writeDurably(paths.nextHistory, rest.right)
        // The journal's appearance is the commit point: from here recovery
        // completes the swap instead of discarding it.
        writeDurably(paths.journal, "")
        syncDirectory(directory)
        recover(paths)
        syncDirectory(directory)
        return Either.right({
          kept: splitLines(rest.right.toString("utf8")).length,
          summaryBytes: Buffer.byteLength(summaryFile, "utf8")
        })
      }).pipe(
        Effect.flatMap(Either.match({
          onLeft: (message) => Effect.fail(new MemoryError({ message })),
          onRight: Effect.succeed
        }))
      )

    return {
      directory,
      snapshot,
      append,
      hasMoreLinesThan,
      exclusiveCompaction,
      planFold,
      linesToFold,
      commitFold
    }
  })

/**
 * mkdir -p, one level at a time. Node's recursive mkdir spins forever where
 * mkdir(2) answers ENOENT under an existing parent (procfs, sysfs).
 */
const makeDirectories = (directory: string) => {
  const missing: Array<string> = []
  for (let dir = directory; !fs.existsSync(dir); dir = path.dirname(dir)) missing.unshift(dir)
  for (const dir of missing) fs.mkdirSync(dir, { mode: 0o700 })
}

/**
 * Makes sure the memory directory exists and is writable: a clear error at
 * start-up beats a failure on the first reply.
 */
export const ensureWritable = (directory: string): Effect.Effect<void, MemoryError> =>
  fsEffect(`memory directory ${directory} is not writable`, () => {
    makeDirectories(directory)
    // access(2) says yes to root on a read-only or immutable directory: only a real write tells.
    const probe = path.join(directory, `.planckclaw-probe-${process.pid}`)
    fs.writeFileSync(probe, "", { mode: 0o600 })
    fs.unlinkSync(probe)
    const history = files(directory).history
    if (fs.existsSync(history)) fs.accessSync(history, fs.constants.R_OK | fs.constants.W_OK)
  })

export const layer: Layer.Layer<Memory, import("effect/ConfigError").ConfigError | MemoryError> = Layer.effect(
  Memory,
  Effect.gen(function*() {
    const directory = yield* MemoryConfig
    yield* ensureWritable(directory)
    return yield* make(directory)
  })
)
