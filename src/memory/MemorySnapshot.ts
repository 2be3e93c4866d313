/**
 * What a turn reads of memory (MemorySnapshot), the soul it gets when none
 * is written (DEFAULT_SOUL), and what a snapshot reader offers. Apart from
 * SnapshotReader.ts, which makes one with its caches, so that file reads in
 * one sitting; SnapshotReader.ts re-exports all of it.
 */
import type * as Effect from "effect/Effect"
import type * as Result from "effect/Result"
import type { HistoryEntry } from "./HistoryFile.js"
import type { MemoryError } from "./MemoryDir.js"

export const DEFAULT_SOUL = "You are a helpful personal assistant."

export interface MemorySnapshot {
  readonly soul: string
  readonly summary: string
  /** The last lines of history that decoded, oldest first. */
  readonly history: ReadonlyArray<HistoryEntry>
}

export interface SnapshotReaderOptions {
  /** Read when soul.md is absent or empty, before DEFAULT_SOUL (a host's default persona). */
  readonly fallbackSoulFile?: string | undefined
  /** The reader of that file (FallbackSoul.reader) shared by a host's agents, so its text is kept once. */
  readonly fallbackSoul?: (() => Result.Result<string, MemoryError>) | undefined
  /**
   * The directory was made just now: its first snapshot is known to hold no
   * summary and no history, so it is not read under the write lock (each
   * file is still checked by one lstat, so one put there meanwhile is read).
   */
  readonly fresh?: boolean | undefined
}

export interface SnapshotReader {
  readonly snapshot: (keep: number) => Effect.Effect<MemorySnapshot, MemoryError>
  /**
   * Keeps the cached tail current after this process appended `entries` to
   * history (inode `ino`) growing it from `size` to `end` bytes, under the lock.
   */
  readonly appended: (ino: number, size: number, end: number, entries: ReadonlyArray<HistoryEntry>) => void
  /**
   * After this process's compaction swapped in `summary` and a history of
   * `lines` lines (the last lines of the old one, which was `oldHistory`),
   * under the lock: the cached tail follows, without reading either again.
   */
  readonly committed: (
    oldHistory: { readonly inode: number; readonly size: number },
    history: { readonly inode: number; readonly size: number; readonly lines: number },
    summary: string
  ) => void
  /** Forgets what it cached of summary and history (a forget moved them): the next snapshot reads them anew. */
  readonly reset: () => void
}
