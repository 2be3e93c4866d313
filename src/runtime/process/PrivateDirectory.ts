/**
 * Private working directories for a run's child (ChildProcess.run, an
 * executable brain): made fresh for it, removed after it, and swept up
 * after a process killed while one of its runs was in one.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { describeError, errnoCode } from "../Errors.js"
import { SpawnError } from "./ChildRun.js"
import { heldBy } from "./PidLiveness.js"

/**
 * The parents and prefixes swept in this process (see sweepLeftovers): once
 * each. Process-wide by nature: what a sweep removes was left by other
 * processes, now dead, and is the same whichever scope of this one sweeps.
 */
const swept = new Set<string>()

/**
 * Lets the owner into every directory of the tree (mode 0700), without
 * following links: a run may leave one it cannot write (a tarball's 0555
 * directories, `chmod -w`), which `rm -rf` cannot empty.
 */
const openUp = (directory: string): void => {
  Result.try(() => fs.chmodSync(directory, 0o700))
  const entries = Result.getOrElse(Result.try(() => fs.readdirSync(directory, { withFileTypes: true })), (): Array<fs.Dirent> => [])
  for (const entry of entries) if (entry.isDirectory()) openUp(path.join(directory, entry.name))
}

/** Removes `directory` and everything in it, opening up what a run made read-only when that is what stops it. */
const removeTree = (directory: string): Result.Result<void, unknown> => {
  const removed = Result.try(() => fs.rmSync(directory, { recursive: true, force: true }))
  if (Result.isSuccess(removed) || !["EACCES", "EPERM", "ENOTEMPTY", "ENOTDIR"].includes(errnoCode(removed.failure) ?? "")) return removed
  openUp(directory)
  return Result.try(() => fs.rmSync(directory, { recursive: true, force: true }))
}

/**
 * Removes the private directories in `parent` that a process killed while a
 * run of its was in one left behind (SIGKILL, the OOM killer: nothing of
 * it could remove them). Each is named after the pid that made it: one whose
 * process is gone, or is a newcomer with the pid, and owned by this user,
 * is removed. Once per parent and prefix, at the first run that needs one.
 */
const sweepLeftovers = (parent: string, prefix: string): void => {
  const key = `${parent}\0${prefix}`
  if (swept.has(key)) return
  swept.add(key)
  const names = Result.getOrElse(Result.try(() => fs.readdirSync(parent)), (): Array<string> => [])
  const uid = process.getuid?.()
  for (const name of names) {
    if (!name.startsWith(prefix)) continue
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1])
    if (!Number.isSafeInteger(pid) || pid === process.pid) continue
    const directory = path.join(parent, name)
    const stat = Result.getOrUndefined(Result.try(() => fs.lstatSync(directory)))
    if (stat === undefined || !stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || heldBy(pid, directory)) continue
    // Another process may be sweeping it too: whatever it fails to remove, the next sweep tries again.
    removeTree(directory)
  }
}

/**
 * A fresh directory only this user can enter (mode 0700, in `parent`),
 * removed with everything in it when the scope closes: a working directory
 * that shares nothing with the agent's. Its name is `prefix`, this
 * process's pid, and a random part, so that what a killed process leaves
 * can be told and removed later.
 */
export const privateDirectory = (parent: string, prefix: string): Effect.Effect<string, SpawnError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        sweepLeftovers(parent, prefix)
        return fs.mkdtempSync(path.join(parent, `${prefix}${process.pid}-`))
      },
      catch: (cause) =>
        new SpawnError({ message: `cannot create a working directory in ${parent}: ${describeError(cause)}`, cause })
    }),
    (directory) =>
      Result.match(removeTree(directory), {
        onFailure: (cause) => Effect.logWarning(`cannot remove the working directory ${directory}: ${describeError(cause)}`),
        onSuccess: () => Effect.void
      })
  )
