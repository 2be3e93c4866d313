/**
 * What a memory directory offers the stores built on it (MemoryDir.ts makes
 * one): its files, its write lock in its several forms, the commit that runs
 * alongside a run's appends, and whether storing is failing. Apart from
 * MemoryDir.ts, so the interface reads in one sitting.
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Semaphore from "effect/Semaphore"
import type * as Result from "effect/Result"
import type * as CommitMirror from "./CommitMirror.js"
import type * as FileLock from "./FileLock.js"
import type * as Layout from "./Layout.js"
import type * as Ledger from "./Ledger.js"
import type { MemoryError } from "./MemoryFiles.js"
import type { AloneOutcome } from "./RunHeld.js"

export interface MemoryDir {
  readonly directory: string
  readonly paths: Layout.Paths
  /**
   * The compaction lock for the scope, taken as this directory's other
   * locks are (a link where it can be); absent: FileLock.hold's file.
   */
  readonly holdCompactionLock?: Effect.Effect<void, FileLock.LockHeld | FileLock.LockFailed, Scope.Scope>
  /**
   * For a run holding its run lock, the only process that appends: runs
   * `fast` without the write lock file, then checks (one lstat(2)) that no
   * other process's compaction is under way, and then (`stillInPlace`) that
   * none committed since the write; if one is or did, runs `redo` under
   * the lock, which must make the append exactly once (the ledger tells
   * whether it landed). When `fast` declines (Locked), or in any other
   * case (a serve agent, the first section of a process, after a failed
   * one): `slow` under the lock. Absent on a directory that is no
   * directory (SqlMemory's guard): then every append is locked.
   */
  readonly appendAlone?: <A>(
    what: string,
    fast: () => Result.Result<AloneOutcome<A>, MemoryError>,
    slow: () => Result.Result<A, MemoryError>,
    redo: () => Result.Result<A, MemoryError>,
    stillInPlace: () => boolean
  ) => Effect.Effect<A, MemoryError>
  /** Told by this process's compaction when it holds (true) or released (false) the compaction lock file. */
  readonly compacting?: (held: boolean) => void
  /**
   * Runs `run` under the write lock (after finishing any interrupted
   * commit). A lock that cannot be created (a full disk) fails, or, for a
   * reader, runs `unlocked` instead.
   */
  readonly locked: <A>(
    what: string,
    run: () => Result.Result<A, MemoryError>,
    unlocked?: () => Result.Result<A, MemoryError>
  ) => Effect.Effect<A, MemoryError>
  /**
   * `locked` for a section that only reads: while this process's commit runs
   * alongside its appends (`lockedAlongside`), under the in-process mutex
   * alone, between the commit's steps (no other process can change the
   * files then: the run and compaction locks are ours), so a turn does not
   * wait for the commit's fsyncs.
   */
  readonly lockedRead: <A>(
    what: string,
    run: () => Result.Result<A, MemoryError>,
    unlocked?: () => Result.Result<A, MemoryError>
  ) => Effect.Effect<A, MemoryError>
  /**
   * `locked` for a section that waits on the file system's thread pool (a
   * compaction's commit: its fsyncs must not hold the event loop): the same
   * lock and recovery, held across the waits; uninterruptible, so the lock
   * is never released under an operation still running.
   */
  readonly lockedAsync: <A>(what: string, run: Effect.Effect<A, MemoryError>) => Effect.Effect<A, MemoryError>
  /**
   * For a run holding its run lock (the directory's only appender): the
   * write lock file held for all of `run`, the in-process mutex only for
   * each of its synchronous `step`s, so this process's appends go on
   * between them, copied into the commit's next files by the mirror `run`
   * installs (CommitMirror.ts). The mirror is removed when `run` ends; after
   * a failure the next section recovers in full. Undefined when the run lock
   * is not held (use `lockedAsync`).
   */
  readonly lockedAlongside?: <A>(what: string, run: (alongside: Alongside) => Effect.Effect<A, MemoryError>) => Effect.Effect<A, MemoryError> | undefined
  /** The commit mirror this process's appends are copied into, while a commit alongside them runs. */
  readonly mirror?: () => CommitMirror.CommitMirror | undefined
  /**
   * Registers the history store a commit alongside its appends works with:
   * its ledger is the next ledger's source, and in the swap's step it keeps
   * the next files' descriptors and knows what they hold (HistoryAppender.adopt).
   */
  readonly adoptCommits?: (adopter: CommitMirror.Adopter) => void
  /**
   * Registers how a turn's locked section opens the compaction's gate
   * (TurnGate.opened) while it waits: a commit alongside the appends holds
   * the write lock file across its gated steps, which wait for the turn.
   */
  readonly openGateWhileLocked?: (opened: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) => void
  /** One compaction at a time in this process, before the compaction lock file. */
  readonly compactionMutex: Semaphore.Semaphore
  /** Whether the last write to memory failed (a full disk). */
  readonly storageFailing: Effect.Effect<boolean>
  /** A write failure is logged once, with the free space, until a write succeeds again. */
  readonly storeFailed: (error: MemoryError) => Effect.Effect<never, MemoryError>
  readonly storeWorked: Effect.Effect<void>
}

/** What a commit alongside the appends is given (MemoryDir.lockedAlongside). */
export interface Alongside {
  /** Runs a synchronous section with this process's appends held back. */
  readonly step: <B>(section: () => Result.Result<B, MemoryError>) => Effect.Effect<B, MemoryError>
  /** From now until the commit ends, this process's appends are copied into `mirror` (call it within a step). */
  readonly mirrorAppends: (mirror: CommitMirror.CommitMirror) => void
  /**
   * In the swap's step, right after the renames: the mirror ends, and the
   * history store takes the next files over (their descriptors then stay
   * open) when it can.
   */
  readonly swapped: (mirror: CommitMirror.CommitMirror, lines: number, summary: string) => void
  /** The ledger as this process's history store knows it to be now, if it does (then not read from the file). */
  readonly ledger: () => Ledger.Ledger | undefined
}
