/**
 * What makes a runtime directory safe to use, checked before a run lays out
 * its pipes. The agent changes only what it created: a directory it makes is
 * made private (with any missing parents) and removed after; an existing one
 * is used only if it is private already, and never chmod-ed. Nothing it did
 * not create is removed, except the pid file and FIFOs of a run that is
 * provably dead, found in a directory that is private to this user (and the
 * takeover guard a start killed meanwhile left, see ClaimGuard).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { describeError, errnoCode } from "../runtime/Errors.js"
import { heldBy } from "../runtime/process/PidLiveness.js"
import { type FifoPaths, fifoEnvNames, fifoKeys, fifoNames, pidFileName } from "./FifoPaths.js"
import { RuntimeDirError } from "./RuntimeDirError.js"

/**
 * A file-system call; its failure is an `io` refusal naming what was
 * attempted. Synchronous: a handful of calls on a local directory, once per
 * run, cost microseconds each, where a trip through the thread pool and a
 * promise each cost a start far more (the same system calls either way).
 */
export const attempt = <A>(what: string, run: () => A): Effect.Effect<A, RuntimeDirError> =>
  Effect.try({
    try: run,
    catch: (cause) => new RuntimeDirError({ reason: "io", message: `${what}: ${describeError(cause)}`, cause })
  })

export const ignoringMissing = <A>(effect: Effect.Effect<A, RuntimeDirError>): Effect.Effect<void, RuntimeDirError> =>
  Effect.asVoid(effect).pipe(
    Effect.catchIf((error) => errnoCode(error.cause) === "ENOENT", () => Effect.void)
  )

/** The entry at `file` without following a symlink; None when there is none (no error is made for that). */
export const lstatOption = (file: string): Effect.Effect<Option.Option<fs.Stats>, RuntimeDirError> =>
  attempt(`cannot inspect ${file}`, () => Option.fromNullishOr(fs.lstatSync(file, { throwIfNoEntry: false })))

const kindOf = (stat: fs.Stats): string =>
  stat.isSymbolicLink()
    ? "a symbolic link"
    : stat.isFIFO()
    ? "a named pipe"
    : stat.isFile()
    ? "a regular file"
    : stat.isDirectory()
    ? "a directory"
    : "a special file"

const octal = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, "0")

export const useAnother = `choose another ${fifoEnvNames.runDir}`
const privateHint = `set ${fifoEnvNames.runDir} to a path that does not exist yet (planckclaw then makes it private ` +
  "and removes it after) or to a directory of yours with mode 0700"

export const refuse = (reason: RuntimeDirError["reason"], message: string, pid?: number) =>
  Effect.fail(new RuntimeDirError({ reason, message, ...(pid === undefined ? {} : { pid }) }))

/** `dir` and its ancestors up to `top` (the first directory mkdir made), deepest first. */
const madeChain = (dir: string, top: string): ReadonlyArray<string> =>
  dir === top || path.dirname(dir) === dir ? [dir] : [dir, ...madeChain(path.dirname(dir), top)]

/** Removes the directories we made, deepest first, while they are empty: whatever someone put there stays. */
export const removeMade = (made: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.forEach(made, (dir) => attempt("rmdir", () => fs.rmdirSync(dir)), { discard: true }).pipe(Effect.ignore)

/** Refuses a directory that is not ours or is open to others; one we just made is set to 0700 whatever the umask took. */
const checkPrivate = (dir: string, fd: number, madeByUs: boolean): Effect.Effect<void, RuntimeDirError> =>
  Effect.gen(function*() {
    const stat = yield* attempt(`cannot inspect runtime directory ${dir}`, () => fs.fstatSync(fd))
    const uid = process.getuid?.()
    if (uid !== undefined && stat.uid !== uid) {
      return yield* refuse(
        "foreign-owner",
        `runtime directory ${dir} is owned by uid ${stat.uid}, not by this user (uid ${uid}); refusing to use it: ${privateHint}`
      )
    }
    if (madeByUs) {
      if ((stat.mode & 0o777) !== 0o700) {
        yield* attempt(`cannot restrict runtime directory ${dir} to mode 0700`, () => fs.fchmodSync(fd, 0o700))
      }
    } else if ((stat.mode & 0o077) !== 0) {
      return yield* refuse(
        "not-private",
        `runtime directory ${dir} is open to other users (mode ${octal(stat.mode)}) and planckclaw does not change ` +
          `a directory it did not create: ${privateHint}`
      )
    }
  })

/**
 * Makes the directory (0700, parents too), or checks that the existing one
 * is private to this user: a real directory (not a symlink), owned by us,
 * with no permission for group or others. Returns the directories it made.
 */
export const claimDirectory = (dir: string): Effect.Effect<ReadonlyArray<string>, RuntimeDirError> =>
  Effect.gen(function*() {
    const before = yield* lstatOption(dir)
    if (Option.isSome(before) && before.value.isSymbolicLink()) {
      return yield* refuse("symlink", `runtime directory ${dir} is a symbolic link; refusing to use it: ${useAnother}`)
    }
    if (Option.isSome(before) && !before.value.isDirectory()) {
      return yield* refuse(
        "not-directory",
        `runtime directory ${dir} is ${kindOf(before.value)}, not a directory: ${useAnother}`
      )
    }
    const top = yield* attempt(`cannot create runtime directory ${dir}`, () => fs.mkdirSync(dir, { recursive: true, mode: 0o700 }))
    const made = top === undefined ? [] : madeChain(dir, top)
    // O_NOFOLLOW + fstat (and fchmod) on one descriptor: what is checked is what is used.
    yield* Effect.acquireUseRelease(
      attempt(`cannot open runtime directory ${dir}`, () =>
        fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW)).pipe(
          Effect.mapError((error) => {
            const code = errnoCode(error.cause)
            return code === "ELOOP" || code === "ENOTDIR"
              ? new RuntimeDirError({
                reason: "not-directory",
                message: `runtime directory ${dir} is not a directory (or a symbolic link): ${useAnother}`
              })
              : error
          })
        ),
      (fd) => checkPrivate(dir, fd, made.length > 0),
      (fd) => Effect.ignore(attempt("close", () => fs.closeSync(fd)))
    ).pipe(Effect.tapError(() => removeMade(made)))
    return made
  })

/**
 * A previous run's pid file: none, or one whose writer is gone. A live run,
 * or a file we cannot vouch for, refuses. (Read here rather than with
 * PidFile.readPidFileSync: an empty file and a file that is not a pid mean
 * different things here, a killed start and someone else's file.)
 */
export const previousRun = (dir: string, pidFile: string): Effect.Effect<Option.Option<string>, RuntimeDirError> =>
  Effect.gen(function*() {
    const found = yield* lstatOption(pidFile)
    if (Option.isNone(found)) return Option.none()
    if (!found.value.isFile()) {
      return yield* refuse(
        "foreign-entry",
        `${pidFile} is ${kindOf(found.value)}, not a pid file planckclaw wrote: remove it or ${useAnother}`
      )
    }
    const text = (yield* attempt(`cannot read ${pidFile}`, () => fs.readFileSync(pidFile, "utf8"))).trim()
    const owner = Number(text)
    // Empty: a kill came between creating the file and writing our pid into it.
    if (text === "") return Option.some("unknown")
    if (!Number.isSafeInteger(owner) || owner <= 0) {
      return yield* refuse(
        "foreign-entry",
        `${pidFile} does not hold a pid, so planckclaw did not write it: remove it or ${useAnother}`
      )
    }
    // A live pid that started after the file was written was reused (after a reboot, pids start over).
    if (heldBy(owner, pidFile)) {
      return yield* refuse(
        "in-use",
        `runtime directory ${dir} is in use by a live run (pid ${owner}); ` +
          `stop it, ${useAnother}, or remove ${pidFile} if that process is not planckclaw`,
        owner
      )
    }
    return Option.some(String(owner))
  })

/**
 * The pipes a dead run left, to be removed. Anything else named like a pipe
 * (a regular file, a symlink, a pipe of someone else, or pipes without the
 * pid file of a dead run) refuses: we did not create it.
 */
export const leftoverPipes = (paths: FifoPaths, deadRun: boolean): Effect.Effect<ReadonlyArray<string>, RuntimeDirError> =>
  // Judged in pipe order: a refusal (or a failed lstat) names the first such entry.
  Effect.map(
    Effect.forEach(fifoKeys, (key) =>
      Effect.gen(function*() {
        const file = paths[key]
        const found = yield* lstatOption(file)
        if (Option.isNone(found)) return Option.none<string>()
        const uid = process.getuid?.()
        if (!found.value.isFIFO() || (uid !== undefined && found.value.uid !== uid)) {
          const what = found.value.isFIFO() ? `a named pipe of uid ${found.value.uid}` : kindOf(found.value)
          return yield* refuse(
            "foreign-entry",
            `runtime directory ${paths.runDir} holds ${fifoNames[key]}, which is not a named pipe of this user ` +
              `(${what}); planckclaw removes only what it created: move ${file} away or ${useAnother}`
          )
        }
        if (!deadRun) {
          return yield* refuse(
            "foreign-entry",
            `runtime directory ${paths.runDir} holds a named pipe ${fifoNames[key]} but no ${pidFileName} of a ` +
              `finished run; remove ${file} if it is a leftover, or ${useAnother}`
          )
        }
        return Option.some(file)
      })),
    Arr.getSomes
  )
