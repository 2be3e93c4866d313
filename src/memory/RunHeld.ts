/**
 * Which memory directories this process holds by their run lock
 * (MemoryHold.ts): a run is then the directory's only appender, and its
 * appends need no write lock file (MemoryDir.appendAlone).
 */
import * as path from "node:path"

/**
 * Directories whose run lock (MemoryHold.ts) this process holds: no other
 * process appends to their history, so an append may go without the
 * per-append write lock file (see `MemoryDir.appendAlone`).
 */
const runHeld = new Map<string, number>()

/** Whether this process holds the run lock of `directory` (an absolute path). */
export const heldByRun = (directory: string): boolean => runHeld.has(directory)

/** Marks `directory` as held by this process's run lock; the returned function unmarks it. */
export const holdForRun = (directory: string): (() => void) => {
  const key = path.resolve(directory)
  runHeld.set(key, (runHeld.get(key) ?? 0) + 1)
  let released = false
  return () => {
    if (released) return
    released = true
    const count = (runHeld.get(key) ?? 1) - 1
    if (count <= 0) runHeld.delete(key)
    else runHeld.set(key, count)
  }
}

/** What an append without the write lock file found after writing (MemoryDir.appendAlone). */
export type AloneOutcome<A> =
  /** Not attempted (another writer may exist, or the store's state is not known): take the lock. */
  | { readonly _tag: "Locked" }
  | { readonly _tag: "Done"; readonly value: A }
