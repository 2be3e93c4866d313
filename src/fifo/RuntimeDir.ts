/**
 * The runtime directory with its six named pipes: their names and paths (and
 * the variables an external bridge receives them in), and laying the
 * directory out for one run, claimed by a pid file, cleaned up with the scope.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Arr from "effect/Array"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { heldBy } from "../process/PidLiveness.js"

export class FifoError extends Data.TaggedError("FifoError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Where the six pipes live. `runDir` holds them and the pid file. */
export interface FifoPaths {
  readonly runDir: string
  readonly interactIn: string
  readonly interactOut: string
  readonly brainIn: string
  readonly brainOut: string
  readonly clawIn: string
  readonly clawOut: string
}

export const fifoNames = {
  interactIn: "interact_in",
  interactOut: "interact_out",
  brainIn: "brain_in",
  brainOut: "brain_out",
  clawIn: "claw_in",
  clawOut: "claw_out"
} as const

type FifoKey = keyof typeof fifoNames
const fifoKeys = Object.keys(fifoNames) as ReadonlyArray<FifoKey>

export const pidFileName = "planckclaw.pid"
export const defaultRunDir = "/tmp/planckclaw"

export const fifoPaths = (runDir: string): FifoPaths => {
  const dir = path.resolve(runDir)
  return {
    runDir: dir,
    interactIn: path.join(dir, fifoNames.interactIn),
    interactOut: path.join(dir, fifoNames.interactOut),
    brainIn: path.join(dir, fifoNames.brainIn),
    brainOut: path.join(dir, fifoNames.brainOut),
    clawIn: path.join(dir, fifoNames.clawIn),
    clawOut: path.join(dir, fifoNames.clawOut)
  }
}

/** The variables an external bridge receives, and a bridge process reads back. */
export const fifoEnvNames = {
  runDir: "PLANCKCLAW_RUN_DIR",
  interactIn: "PLANCKCLAW_INTERACT_IN",
  interactOut: "PLANCKCLAW_INTERACT_OUT",
  brainIn: "PLANCKCLAW_BRAIN_IN",
  brainOut: "PLANCKCLAW_BRAIN_OUT",
  clawIn: "PLANCKCLAW_CLAW_IN",
  clawOut: "PLANCKCLAW_CLAW_OUT"
} as const

/**
 * `PLANCKCLAW_RUN_DIR` (default `/tmp/planckclaw`) gives all six paths; each
 * `PLANCKCLAW_<PIPE>` overrides one, as an external bridge receives them.
 */
export const fifoPathsConfig: Config.Config<FifoPaths> = Config.all({
  runDir: Config.string(fifoEnvNames.runDir).pipe(Config.withDefault(defaultRunDir)),
  overrides: Config.all(
    Object.fromEntries(fifoKeys.map((key) => [key, Config.option(Config.string(fifoEnvNames[key]))])) as {
      [K in FifoKey]: Config.Config<Option.Option<string>>
    }
  )
}).pipe(
  Config.map(({ overrides, runDir }) => {
    const defaults = fifoPaths(runDir)
    return {
      ...defaults,
      ...Object.fromEntries(fifoKeys.map((key) => [key, Option.getOrElse(overrides[key], () => defaults[key])]))
    } as FifoPaths
  })
)

//
// The agent changes only what it created: a directory it makes is made
// private (with any missing parents) and removed after; an existing one is
// used only if it is private already, and never chmod-ed. Nothing it did not
// create is removed, except the pid file and FIFOs of a run that is provably
// dead, found in a directory that is private to this user.

const errnoCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

export const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const attempt = <A>(what: string, run: () => Promise<A>): Effect.Effect<A, FifoError> =>
  Effect.tryPromise({ try: run, catch: (cause) => new FifoError({ message: `${what}: ${describe(cause)}`, cause }) })

const ignoringMissing = <A>(effect: Effect.Effect<A, FifoError>): Effect.Effect<void, FifoError> =>
  Effect.asVoid(effect).pipe(
    Effect.catchIf((error) => errnoCode(error.cause) === "ENOENT", () => Effect.void)
  )

/** The entry at `file` without following a symlink; None when there is none. */
const lstatOption = (file: string): Effect.Effect<Option.Option<fs.Stats>, FifoError> =>
  attempt(`cannot inspect ${file}`, () => fs.promises.lstat(file)).pipe(
    Effect.map(Option.some),
    Effect.catchIf((error) => errnoCode(error.cause) === "ENOENT", () => Effect.succeedNone)
  )

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

const useAnother = `choose another ${fifoEnvNames.runDir}`
const privateHint = `set ${fifoEnvNames.runDir} to a path that does not exist yet (planckclaw then makes it private ` +
  "and removes it after) or to a directory of yours with mode 0700"

const refuse = (message: string) => Effect.fail(new FifoError({ message }))

/** `dir` and its ancestors up to `top` (the first directory mkdir made), deepest first. */
const madeChain = (dir: string, top: string): ReadonlyArray<string> =>
  dir === top || path.dirname(dir) === dir ? [dir] : [dir, ...madeChain(path.dirname(dir), top)]

/** Removes the directories we made, deepest first, while they are empty: whatever someone put there stays. */
const removeMade = (made: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.forEach(made, (dir) => attempt("rmdir", () => fs.promises.rmdir(dir)), { discard: true }).pipe(Effect.ignore)

/** Refuses a directory that is not ours or is open to others; one we just made is set to 0700 whatever the umask took. */
const checkPrivate = (dir: string, handle: fs.promises.FileHandle, madeByUs: boolean): Effect.Effect<void, FifoError> =>
  Effect.gen(function*() {
    const stat = yield* attempt(`cannot inspect runtime directory ${dir}`, () => handle.stat())
    const uid = process.getuid?.()
    if (uid !== undefined && stat.uid !== uid) {
      return yield* refuse(
        `runtime directory ${dir} is owned by uid ${stat.uid}, not by this user (uid ${uid}); refusing to use it: ${privateHint}`
      )
    }
    if (madeByUs) {
      if ((stat.mode & 0o777) !== 0o700) {
        yield* attempt(`cannot restrict runtime directory ${dir} to mode 0700`, () => handle.chmod(0o700))
      }
    } else if ((stat.mode & 0o077) !== 0) {
      return yield* refuse(
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
const claimDirectory = (dir: string): Effect.Effect<ReadonlyArray<string>, FifoError> =>
  Effect.gen(function*() {
    const before = yield* lstatOption(dir)
    if (Option.isSome(before) && before.value.isSymbolicLink()) {
      return yield* refuse(`runtime directory ${dir} is a symbolic link; refusing to use it: ${useAnother}`)
    }
    if (Option.isSome(before) && !before.value.isDirectory()) {
      return yield* refuse(`runtime directory ${dir} is ${kindOf(before.value)}, not a directory: ${useAnother}`)
    }
    const top = yield* attempt(`cannot create runtime directory ${dir}`, () =>
      fs.promises.mkdir(dir, { recursive: true, mode: 0o700 }))
    const made = top === undefined ? [] : madeChain(dir, top)
    // O_NOFOLLOW + fstat (and fchmod) on one descriptor: what is checked is what is used.
    yield* Effect.acquireUseRelease(
      attempt(`cannot open runtime directory ${dir}`, () =>
        fs.promises.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW)).pipe(
          Effect.mapError((error) => {
            const code = errnoCode(error.cause)
            return code === "ELOOP" || code === "ENOTDIR"
              ? new FifoError({ message: `runtime directory ${dir} is not a directory (or a symbolic link): ${useAnother}` })
              : error
          })
        ),
      (handle) => checkPrivate(dir, handle, made.length > 0),
      (handle) => Effect.ignore(attempt("close", () => handle.close()))
    ).pipe(Effect.tapError(() => removeMade(made)))
    return made
  })

/** A previous run's pid file: none, or one whose writer is gone. A live run, or a file we cannot vouch for, refuses. */
const previousRun = (dir: string, pidFile: string): Effect.Effect<Option.Option<string>, FifoError> =>
  Effect.gen(function*() {
    const found = yield* lstatOption(pidFile)
    if (Option.isNone(found)) return Option.none()
    if (!found.value.isFile()) {
      return yield* refuse(`${pidFile} is ${kindOf(found.value)}, not a pid file planckclaw wrote: remove it or ${useAnother}`)
    }
    const text = (yield* attempt(`cannot read ${pidFile}`, () => fs.promises.readFile(pidFile, "utf8"))).trim()
    const owner = Number(text)
    // Empty: a kill came between creating the file and writing our pid into it.
    if (text === "") return Option.some("unknown")
    if (!Number.isSafeInteger(owner) || owner <= 0) {
      return yield* refuse(`${pidFile} does not hold a pid, so planckclaw did not write it: remove it or ${useAnother}`)
    }
    // A live pid that started after the file was written was reused (after a reboot, pids start over).
    if (heldBy(owner, pidFile)) {
      return yield* refuse(
        `runtime directory ${dir} is in use by a live run (pid ${owner}); ` +
          `stop it, ${useAnother}, or remove ${pidFile} if that process is not planckclaw`
      )
    }
    return Option.some(String(owner))
  })

/**
 * The pipes a dead run left, to be removed. Anything else named like a pipe
 * (a regular file, a symlink, a pipe of someone else, or pipes without the
 * pid file of a dead run) refuses: we did not create it.
 */
const leftoverPipes = (paths: FifoPaths, deadRun: boolean): Effect.Effect<ReadonlyArray<string>, FifoError> =>
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
            `runtime directory ${paths.runDir} holds ${fifoNames[key]}, which is not a named pipe of this user ` +
              `(${what}); planckclaw removes only what it created: move ${file} away or ${useAnother}`
          )
        }
        if (!deadRun) {
          return yield* refuse(
            `runtime directory ${paths.runDir} holds a named pipe ${fifoNames[key]} but no ${pidFileName} of a ` +
              `finished run; remove ${file} if it is a leftover, or ${useAnother}`
          )
        }
        return Option.some(file)
      })),
    Arr.getSomes
  )

/** Writes our pid with O_EXCL. */
const writePidFile = (dir: string, pidFile: string): Effect.Effect<string, FifoError> =>
  attempt(`cannot write ${pidFile}`, () => fs.promises.writeFile(pidFile, `${process.pid}\n`, { flag: "wx", mode: 0o600 })).pipe(
    Effect.as(pidFile),
    Effect.catchIf((error) => errnoCode(error.cause) === "EEXIST", () =>
      refuse(`runtime directory ${dir} was claimed by another run starting at the same time; ${useAnother}`))
  )

const releasePidFile = (pidFile: string): Effect.Effect<void> =>
  attempt(`cannot read ${pidFile}`, () => fs.promises.readFile(pidFile, "utf8")).pipe(
    Effect.flatMap((text) =>
      Number(text.trim()) === process.pid
        ? attempt(`cannot remove ${pidFile}`, () => fs.promises.unlink(pidFile))
        : Effect.void
    ),
    ignoringMissing,
    Effect.catchAll((error) => Effect.logWarning(error.message))
  )

const mkfifo = (paths: ReadonlyArray<string>): Effect.Effect<void, FifoError> =>
  Effect.async<void, FifoError>((resume) => {
    const child = execFile("mkfifo", ["-m", "600", "--", ...paths], (error, _stdout, stderr) =>
      resume(
        error === null
          ? Effect.void
          : Effect.fail(new FifoError({ message: `mkfifo failed: ${stderr.trim() || describe(error)}`, cause: error }))
      ))
    return Effect.sync(() => child.kill())
  })

/** Removes each file that is still a FIFO (and, given `made`, still the very one we made). */
const unlinkFifos = (files: ReadonlyArray<string>, made?: ReadonlyMap<string, number>): Effect.Effect<void, FifoError> =>
  Effect.forEach(files, (file) =>
    Effect.flatMap(lstatOption(file), (found) =>
      Option.isSome(found) && found.value.isFIFO() && (made === undefined || made.get(file) === found.value.ino)
        ? ignoringMissing(attempt(`cannot remove ${file}`, () => fs.promises.unlink(file)))
        : Effect.void), { discard: true })

/** Makes the six FIFOs (0600); each was checked absent under our pid file, so a failure removes only what mkfifo made. */
const makeFifos = (files: ReadonlyArray<string>): Effect.Effect<ReadonlyMap<string, number>, FifoError> =>
  mkfifo(files).pipe(
    Effect.tapError(() => Effect.ignore(unlinkFifos(files))),
    Effect.zipRight(Effect.forEach(files, (file) =>
      attempt(`cannot inspect ${file}`, () => fs.promises.lstat(file)).pipe(Effect.map((stat) => [file, stat.ino] as const)))),
    Effect.map((entries) => new Map(entries))
  )

/**
 * Lays out the runtime directory for one run: makes it (0700) or checks that
 * it is private to us, claims it with `planckclaw.pid`, and makes the six
 * FIFOs (0600), replacing those of a dead run. On scope close exactly what
 * this run made goes: its FIFOs, its pid file, and the directories it made.
 * Refuses a symlink, a directory not private to us, one in use by a live
 * run, and any entry named like a pipe that it may not remove.
 */
export const makeRuntimeDir = (runDir: string): Effect.Effect<FifoPaths, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const paths = fifoPaths(runDir)
    yield* Effect.acquireRelease(claimDirectory(paths.runDir), removeMade)
    const pidFile = path.join(paths.runDir, pidFileName)
    const dead = yield* previousRun(paths.runDir, pidFile)
    const stale = yield* leftoverPipes(paths, Option.isSome(dead))
    if (Option.isSome(dead)) {
      yield* Effect.logWarning(`removing stale run state in ${paths.runDir} left by pid ${dead.value}`)
      yield* ignoringMissing(attempt(`cannot remove stale ${pidFile}`, () => fs.promises.unlink(pidFile)))
    }
    yield* Effect.acquireRelease(writePidFile(paths.runDir, pidFile), releasePidFile)
    yield* unlinkFifos(stale)
    const files = fifoKeys.map((key) => paths[key])
    yield* Effect.acquireRelease(
      makeFifos(files),
      (made) => unlinkFifos(files, made).pipe(Effect.catchAll((error) => Effect.logWarning(error.message)))
    )
    return paths
  })
