/**
 * Which memory directories this process holds by their run lock
 * (MemoryHold.ts): a run is then the directory's only appender, and its
 * appends need no write lock file (MemoryDir.appendAlone).
 */
import * as path from "node:path"

/**
 * Directories whose run lock (MemoryHold.ts) this process holds: no other
 * process appends to their history, so an append may go without the
 * per-append write lock file (see `MemoryDir.appendAlone`). Process-wide
 * by nature: the run lock names the pid, and every store of this process on
 * the directory may append alone under it.
 */
const runHeld = new Map<string, { holders: number; readonly lockFile: string | undefined }>()

/** Whether this process holds the run lock of `directory` (an absolute path). */
export const heldByRun = (directory: string): boolean => runHeld.has(directory)

/**
 * The run lock file of `directory` (an absolute path), when this process
 * made it and it names this process: the directory's other locks can be
 * hard links to it (FileLock's `ownerFile`), which allocate no inode.
 */
export const runLockFile = (directory: string): string | undefined => runHeld.get(directory)?.lockFile

/**
 * Marks `directory` as held by this process's run lock (`lockFile`, when it
 * is a file this process made naming it); the returned function unmarks it.
 */
export const holdForRun = (directory: string, lockFile?: string): (() => void) => {
  const key = path.resolve(directory)
  const held = runHeld.get(key)
  if (held === undefined) runHeld.set(key, { holders: 1, lockFile: lockFile === undefined ? undefined : path.resolve(lockFile) })
  else held.holders++
  let released = false
  return () => {
    if (released) return
    released = true
    const left = runHeld.get(key)
    if (left === undefined) return
    left.holders--
    if (left.holders <= 0) runHeld.delete(key)
  }
}

/** What an append without the write lock file found after writing (MemoryDir.appendAlone). */
export type AloneOutcome<A> =
  /** Not attempted (another writer may exist, or the store's state is not known): take the lock. */
  | { readonly _tag: "Locked" }
  | { readonly _tag: "Done"; readonly value: A }
