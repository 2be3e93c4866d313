/**
 * For the tests of claims taken over from a dead holder (the run's pid file,
 * the bridges' claims): dead and live processes standing for other starts,
 * and another start taking a file over at the exact instant after this
 * process first read it.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import { Effect, Result } from "effect"
import type * as Scope from "effect/Scope"
import { patchFs } from "../support/PatchedFs.js"

/** The pid of a process that has exited: a file naming it is stale. */
export const deadPid = Effect.callback<number>((resume) => {
  const gone = child.spawn("true", [], { stdio: "ignore" })
  gone.once("exit", () => resume(Effect.succeed(gone.pid!)))
})

/** The pid of a live process that is not us, standing for another planckclaw; killed with the scope. */
export const otherProcess: Effect.Effect<number, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => child.spawn("sleep", ["60"], { stdio: "ignore" })),
    (process) => Effect.sync(() => process.kill("SIGKILL"))
  ),
  (process) => process.pid!
)

/**
 * Another start's takeover of `file`, as a planckclaw of this version does
 * it: under `<file>.takeover` if it can make it (O_EXCL), the stale file
 * replaced by one naming `pid`. Whether it ended up holding the file.
 */
const takeOver = (file: string, pid: number): boolean => {
  const guard = `${file}.takeover`
  if (Result.isFailure(Result.try(() => fs.writeFileSync(guard, `${pid}\n`, { flag: "wx" })))) return false
  const replaced = Result.try(() => {
    fs.rmSync(file, { force: true })
    fs.writeFileSync(file, `${pid}\n`, { flag: "wx" })
  })
  fs.unlinkSync(guard)
  return Result.isSuccess(replaced)
}

/**
 * Right after this process's first read of `file` (it has seen the dead
 * holder), another start `pid` that found it dead too takes it over. Gives
 * whether that happened (`raced`) and whether the other start holds the file.
 */
export const otherTakesOverAfterFirstRead = (file: string, pid: number) => {
  const outcome = { raced: false, otherHolds: false }
  return Effect.as(
    patchFs("readFileSync", (real) =>
      ((target: fs.PathOrFileDescriptor, ...rest: Array<any>) => {
        const read = (real as any)(target, ...rest)
        if (!outcome.raced && String(target) === file) {
          outcome.raced = true
          outcome.otherHolds = takeOver(file, pid)
        }
        return read
      }) as typeof fs.readFileSync),
    outcome
  )
}
