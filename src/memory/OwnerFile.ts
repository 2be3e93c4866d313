/**
 * A file naming this process (its pid), made once in a directory, to which
 * the locks this process takes below it are hard links (FileLock's
 * `ownerFile`). link(2) adds a name to an inode that exists; a symbolic
 * link or a new file allocates an inode, which across thousands of agent
 * directories costs several times more (9 against 78 µs per lock over
 * 3,000 directories on an idle ext4; 180–435 µs per symlink in profiles
 * of `serve` under load). A lock that is a link reads like a lock file: the
 * pid is its content, its modification time the owner file's.
 *
 * Removed with the scope. Files left by dead processes are removed when the
 * next one makes its own in the same directory; a lock still linked to one
 * names a dead pid and is taken over as any stale lock.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { readPidFileSync } from "../runtime/process/PidFile.js"
import { heldBy } from "../runtime/process/PidLiveness.js"

const PREFIX = ".planckclaw-owner-"

/**
 * By directory: this process's owner file there and how many hold it.
 * Process-wide by nature: the file is named by the pid, one per process, shared by every scope that locks there.
 */
const made = new Map<string, { readonly file: string; holders: number }>()

/** Owner files of processes no longer running (or an earlier process with this pid). */
const clearDead = (directory: string) => {
  const names = Result.getOrElse(Result.try(() => fs.readdirSync(directory)), () => [] as Array<string>)
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue
    const file = path.join(directory, name)
    const pid = readPidFileSync(file)
    if (pid === undefined || pid === process.pid || !heldBy(pid, file)) Result.try(() => fs.unlinkSync(file))
  }
}

const make = (directory: string): string | undefined => {
  clearDead(directory)
  const file = path.join(directory, `${PREFIX}${process.pid}`)
  const written = Result.try(() => {
    const fd = fs.openSync(file, "wx", 0o600)
    try {
      fs.writeSync(fd, `${process.pid}\n`)
    } finally {
      fs.closeSync(fd)
    }
  })
  if (Result.isSuccess(written)) return file
  Result.try(() => fs.unlinkSync(file))
  return undefined
}

const take = (key: string): string | undefined => {
  const existing = made.get(key)
  if (existing !== undefined) {
    existing.holders++
    return existing.file
  }
  const file = make(key)
  if (file !== undefined) made.set(key, { file, holders: 1 })
  return file
}

const release = (key: string) => {
  const entry = made.get(key)
  if (entry === undefined || --entry.holders > 0) return
  made.delete(key)
  Result.try(() => fs.unlinkSync(entry.file))
}

/**
 * This process's owner file in `directory`, made at the first call (a host
 * that starts no agent leaves nothing behind) and removed with the scope;
 * undefined when it cannot be made (locks are then symbolic links).
 */
export const onFirstUse = (directory: string): Effect.Effect<() => string | undefined, never, Scope.Scope> => {
  const key = path.resolve(directory)
  let taken: { readonly file: string | undefined } | undefined
  return Effect.as(
    Effect.addFinalizer(() => Effect.sync(() => taken?.file !== undefined && release(key))),
    () => (taken ??= { file: take(key) }).file
  )
}
