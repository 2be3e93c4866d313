/**
 * The agent's memory on disk, in the original's format: soul.md (persona),
 * summary.md (written only by compaction) and history.jsonl (one
 * {"role","content"} per line). Every write of history happens under a
 * cross-process lock, so `planckclaw compact` in another process never races
 * a turn; a compaction commits its files through a journal so a kill at any
 * instant leaves either the old files or the new. Memory files are opened
 * without following links and only if they are regular files of this user.
 * A write that cannot land whole (a full disk) is cut back and reported once;
 * reading never needs a new file, so turns are answered on a full disk.
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
import * as FileLock from "./FileLock.js"
import {
  describeFsError,
  encodeEntry,
  endsWithNewline,
  extendCount,
  type HistoryEntry,
  type LineCount,
  parseLine,
  readLines,
  readRange,
  scanTail,
  splitLines,
  streamLines
} from "./HistoryFile.js"
import * as Layout from "./Layout.js"
import * as Ledger from "./Ledger.js"
import * as SafeFile from "./SafeFile.js"

export type { HistoryEntry } from "./HistoryFile.js"

export const DEFAULT_SOUL = "You are a helpful personal assistant."

export class MemoryError extends Data.TaggedError("MemoryError")<{
  readonly message: string
  readonly cause?: unknown
  /** Already logged (a store failure is logged once, not once per turn). */
  readonly reported?: boolean
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
  readonly snapshot: (keep: number) => Effect.Effect<MemorySnapshot, MemoryError>
  /** Appends lines to history: all of them, or nothing. */
  readonly append: (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) => Effect.Effect<void, MemoryError>
  /** Whether the last write to memory failed (a full disk): compaction waits until one succeeds. */
  readonly storageFailing: Effect.Effect<boolean>
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

const fsEffect = <A>(what: string, run: () => Either.Either<A, MemoryError>): Effect.Effect<A, MemoryError> =>
  Effect.flatten(
    Effect.try({ try: run, catch: (cause) => new MemoryError({ message: `${what}: ${describeFsError(cause)}`, cause }) })
  )

const memoryError = (error: SafeFile.MemoryFileError) => new MemoryError({ message: error.message, cause: error })

/** Runs `use` on the open history file; a missing file is `absent`. */
const withHistory = <A>(
  file: string,
  how: number,
  absent: A,
  use: (fd: number) => Either.Either<A, MemoryError>
): Either.Either<A, MemoryError> => {
  const result = SafeFile.withFile(file, how, use)
  if (Either.isRight(result)) return Either.right(result.right)
  const error = result.left
  if (error._tag === "MemoryFileFailed" && error.code === "ENOENT") return Either.right(absent)
  return Either.left(error._tag === "MemoryError" ? error : memoryError(error))
}

export const make = (directory: string): Effect.Effect<MemoryService> =>
  Effect.gen(function*() {
    const paths = Layout.files(directory)
    // File locks identify owners by pid, so fibers of this process must take
    // turns before touching them.
    const writeMutex = yield* Effect.makeSemaphore(1)
    const compactionMutex = yield* Effect.makeSemaphore(1)
    const reported = new Set<string>()
    let storageFailing = false

    /**
     * Runs `run` under the write lock (after finishing any interrupted
     * commit). A lock that cannot be created (a full disk) fails, or, for a
     * reader, runs `unlocked` instead.
     */
    const locked = <A>(
      what: string,
      run: () => Either.Either<A, MemoryError>,
      unlocked?: () => Either.Either<A, MemoryError>
    ): Effect.Effect<A, MemoryError> =>
      writeMutex.withPermits(1)(Effect.suspend(() => {
        let taken = FileLock.tryTakeSync(paths.writeLock)
        if (Either.isLeft(taken) && taken.left._tag === "LockFailed" && !fs.existsSync(directory)) {
          // Removed under a running agent (by hand): make it again rather than fail every turn.
          Either.try(() => Layout.makeDirectories(directory))
          taken = FileLock.tryTakeSync(paths.writeLock)
        }
        // The usual case, a free lock: take it, work and release in one synchronous step.
        if (Either.isRight(taken)) {
          return fsEffect(what, () => {
            try {
              Layout.recover(paths)
              return run()
            } finally {
              FileLock.releaseSync(paths.writeLock)
            }
          })
        }
        const failed = (error: FileLock.LockHeld | FileLock.LockFailed) =>
          error._tag === "LockFailed" && unlocked !== undefined
            ? fsEffect(what, unlocked)
            : Effect.fail(
              new MemoryError({
                message: error._tag === "LockHeld"
                  ? `${directory} stayed locked by process ${error.ownerPid}`
                  : `cannot lock ${directory}: ${error.message}`
              })
            )
        if (taken.left._tag === "LockFailed") return failed(taken.left)
        return Effect.scoped(
          FileLock.holdWaiting(paths.writeLock).pipe(
            Effect.matchEffect({
              onFailure: failed,
              onSuccess: () =>
                fsEffect(what, () => {
                  Layout.recover(paths)
                  return run()
                })
            })
          )
        )
      }))

    /** A write failure is logged once, with the free space, until a write succeeds again. */
    const storeFailed = (error: MemoryError) =>
      Effect.suspend(() => {
        const again = new MemoryError({ message: error.message, cause: error.cause, reported: true })
        if (storageFailing) return Effect.fail(again)
        storageFailing = true
        const free = SafeFile.freeBytes(directory)
        return Effect.logError(
          `cannot store exchanges: ${error.message}; ${free === undefined ? "free space unknown" : `${free} bytes free`} ` +
            `on the filesystem of ${directory}. Replies are still sent; unstored exchanges wait in the inbox journal ` +
            "and are stored once writing works again (logged once)"
        ).pipe(Effect.zipRight(Effect.fail(again)))
      })

    const storeWorked = Effect.suspend(() => {
      if (!storageFailing) return Effect.void
      storageFailing = false
      return Effect.logInfo(`memory in ${directory} is writable again`)
    })

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
      if (Either.isLeft(ledgerText)) return Either.left(memoryError(ledgerText.left))
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
        if (Either.isLeft(noted)) return Either.left(memoryError(noted.left))
      }
      const written = SafeFile.appendAll(fd, paths.history, bytes, size)
      if (Either.isLeft(written)) return Either.left(memoryError(written.left))
      // Our own append keeps the count current: the next check needs no lock.
      if (known !== undefined && known.inode === ino && known.size <= size) known = extendCount(fd, known, size + bytes.length)
      return Either.void
    }

    const append = (entries: ReadonlyArray<HistoryEntry>, options?: AppendOptions) =>
      locked("appending to history.jsonl", () =>
        SafeFile.withFile(paths.history, SafeFile.flags.append, writeLines(entries, options)).pipe(
          Either.mapLeft((error) => error._tag === "MemoryError" ? error : memoryError(error))
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
      locked("planning compaction", () =>
        withHistory(paths.history, SafeFile.flags.read, Option.none<FoldPlan>(), (fd) => {
          const tail = scanTail(fd, keep)
          const inode = fs.fstatSync(fd).ino
          // keep = 0 folds everything; otherwise a short history has nothing older.
          const older = keep === 0 ? tail.offset > 0 : tail.count === keep && tail.offset > 0
          return Either.right(older ? Option.some({ splitOffset: tail.offset, inode }) : Option.none<FoldPlan>())
        }))

    const linesToFold = (plan: FoldPlan) =>
      streamLines(paths.history, plan.splitOffset).pipe(
        Stream.mapError((cause) => new MemoryError({ message: `reading history.jsonl: ${cause.message}`, cause }))
      )

    /** Writes the new summary, history and ledger beside the old ones, then commits them. */
    const commit = (plan: FoldPlan, summaryFile: string, rest: Buffer, size: number) => {
      const ledgerText = SafeFile.read(paths.ledger)
      const steps = Either.flatMap(ledgerText, (text) =>
        Either.flatMap(Layout.writeNew(paths.nextSummary, summaryFile), () =>
          Either.flatMap(Layout.writeNew(paths.nextHistory, rest), (inode) =>
            Layout.writeNew(
              paths.nextLedger,
              Ledger.encode(Ledger.afterFold(Ledger.parse(text), plan.inode, inode, plan.splitOffset, size))
            ))))
      // The journal's appearance is the commit point: from here recovery
      // completes the swap instead of discarding it.
      const committed = Either.flatMap(steps, () => Layout.writeNew(paths.journal, ""))
      if (Either.isLeft(committed)) {
        Layout.recover(paths)
        return Either.left(memoryError(committed.left))
      }
      Layout.syncDirectory(directory)
      Layout.recover(paths)
      Layout.syncDirectory(directory)
      return Either.void
    }

    const commitFold = (plan: FoldPlan, summary: string) =>
      locked("committing compaction", (): Either.Either<FoldResult, MemoryError> => {
        const rest = withHistory(paths.history, SafeFile.flags.read, undefined, (fd) => {
          const stat = fs.fstatSync(fd)
          if (stat.ino !== plan.inode || stat.size < plan.splitOffset) return Either.right(undefined)
          const buffer = Buffer.allocUnsafe(stat.size - plan.splitOffset)
          fs.readSync(fd, buffer, 0, buffer.length, plan.splitOffset)
          return Either.right({ buffer, size: stat.size })
        })
        if (Either.isLeft(rest)) return Either.left(rest.left)
        if (rest.right === undefined) {
          return Either.left(
            new MemoryError({ message: "history.jsonl was replaced or shortened during compaction; nothing changed" })
          )
        }
        const summaryFile = summary.length === 0 || summary.endsWith("\n") ? summary : `${summary}\n`
        return Either.map(commit(plan, summaryFile, rest.right.buffer, rest.right.size), () => ({
          kept: splitLines(rest.right!.buffer.toString("utf8")).length,
          summaryBytes: Buffer.byteLength(summaryFile, "utf8")
        }))
      }).pipe(Effect.tap(() => storeWorked))

    return {
      directory,
      snapshot,
      append,
      storageFailing: Effect.sync(() => storageFailing),
      hasMoreLinesThan,
      exclusiveCompaction,
      planFold,
      linesToFold,
      commitFold
    }
  })

const tolerated = new Set(["ENOSPC", "EDQUOT"])

/**
 * Makes sure the memory directory exists and is writable, and that no file
 * the agent writes is a link, a non-regular file or someone else's: a clear
 * error at start-up beats a failure on the first reply. A full disk is only
 * a warning: turns are answered, and stored once space returns.
 */
export const ensureWritable = (directory: string): Effect.Effect<void, MemoryError> =>
  Effect.gen(function*() {
    const probed = yield* fsEffect(`memory directory ${directory} is not writable`, () => {
      Layout.makeDirectories(directory)
      // access(2) says yes to root on a read-only or immutable directory: only a real write tells.
      const probe = path.join(directory, `.planckclaw-probe-${process.pid}`)
      Either.try(() => fs.unlinkSync(probe))
      const created = Either.try(() => {
        fs.writeFileSync(probe, "", { mode: 0o600, flag: "wx" })
        fs.unlinkSync(probe)
      })
      if (Either.isLeft(created)) {
        const code = (created.left as NodeJS.ErrnoException).code
        if (code === undefined || !tolerated.has(code)) return Either.left(new MemoryError({
          message: `memory directory ${directory} is not writable: ${describeFsError(created.left)}`,
          cause: created.left
        }))
      }
      const paths = Layout.files(directory)
      for (const file of Layout.written(paths)) {
        const checked = SafeFile.check(file)
        if (Either.isLeft(checked)) return Either.left(memoryError(checked.left))
      }
      if (fs.existsSync(paths.history)) fs.accessSync(paths.history, fs.constants.R_OK | fs.constants.W_OK)
      return Either.right(Either.isLeft(created))
    })
    if (probed) {
      const free = SafeFile.freeBytes(directory)
      yield* Effect.logWarning(
        `memory directory ${directory} is full (${free ?? "unknown"} bytes free): replies are sent, ` +
          "and exchanges are stored once space returns"
      )
    }
  })

export const layer: Layer.Layer<Memory, import("effect/ConfigError").ConfigError | MemoryError> = Layer.effect(
  Memory,
  Effect.gen(function*() {
    const directory = yield* MemoryConfig
    yield* ensureWritable(directory)
    return yield* make(directory)
  })
)
