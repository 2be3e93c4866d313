/**
 * The runtime directory of one run: laid out with its six named pipes,
 * claimed by a pid file, and cleaned up with the scope. `layer` provides its
 * paths (the `RunPaths` tag) to every far end and near end of a run. The
 * checks that decide whether a directory may be used are in
 * RuntimeDirChecks; the names and paths of the pipes in FifoPaths.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type * as ConfigError from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { describeError, errnoCode } from "../runtime/Errors.js"
import { readPidFileSync } from "../runtime/process/PidFile.js"
import * as ClaimGuard from "./ClaimGuard.js"
import { type FifoPaths, fifoKeys, fifoPaths, fifoPathsConfig, pidFileName } from "./FifoPaths.js"
import { releaseIfOurs, writeOwnPid } from "./OwnPidFile.js"
import {
  attempt,
  claimDirectory,
  ignoringMissing,
  leftoverPipes,
  lstatOption,
  previousRun,
  refuse,
  removeMade,
  useAnother
} from "./RuntimeDirChecks.js"
import { RuntimeDirError } from "./RuntimeDirError.js"
import * as BridgeClaim from "./BridgeClaim.js"

export {
  defaultRunDir,
  FifoError,
  type FifoKey,
  type FifoPaths,
  fifoEnvNames,
  fifoKeys,
  fifoNames,
  fifoPaths,
  fifoPathsConfig,
  pidFileName
} from "./FifoPaths.js"
export { RuntimeDirError } from "./RuntimeDirError.js"

/** Writes our pid with O_EXCL (under the guard: a file there now was made by a start that does not take it). */
const writePidFile = (dir: string, pidFile: string): Effect.Effect<void, RuntimeDirError> =>
  Effect.flatMap(writeOwnPid(pidFile), (written) => written ? Effect.void : claimedMeanwhile(dir, readPidFileSync(pidFile)))

const claimedMeanwhile = (dir: string, pid: number | undefined) =>
  refuse(
    "in-use",
    `runtime directory ${dir} was claimed by another run starting at the same time` +
      `${pid === undefined ? "" : ` (pid ${pid})`}; stop it or ${useAnother}`,
    pid
  )

/**
 * Claims the directory with our pid file, replacing a dead run's (see
 * ClaimGuard): looked at first (a live run or a file not ours is refused at
 * once), then judged again, removed and written under the guard, since
 * another start may have taken it over since. The pipes a dead run left, to
 * be replaced.
 */
const claimPidFile = (paths: FifoPaths, pidFile: string): Effect.Effect<ReadonlyArray<string>, RuntimeDirError> =>
  Effect.andThen(
    previousRun(paths.runDir, pidFile),
    ClaimGuard.guardedPatiently(
      pidFile,
      Effect.gen(function*() {
        const dead = yield* previousRun(paths.runDir, pidFile)
        const stale = yield* leftoverPipes(paths, Option.isSome(dead))
        if (Option.isSome(dead)) {
          yield* Effect.logWarning(`removing stale run state in ${paths.runDir} left by pid ${dead.value}`)
          yield* ignoringMissing(attempt(`cannot remove stale ${pidFile}`, () => fs.unlinkSync(pidFile)))
        }
        yield* writePidFile(paths.runDir, pidFile)
        return stale
      })
    ).pipe(Effect.catchTag("ClaimBusy", (busy) => claimedMeanwhile(paths.runDir, busy.takerPid)))
  )

const releasePidFile = (pidFile: string): Effect.Effect<void> =>
  releaseIfOurs(pidFile, attempt(`cannot read ${pidFile}`, () => Number(fs.readFileSync(pidFile, "utf8").trim())))

/**
 * Where mkfifo is tried, in order: the usual path first, which spares the
 * child a search of PATH (a PATH with shims and tool directories first costs
 * the child a failed exec in each), then PATH's. Once the usual one is found
 * missing, only PATH's is tried by that runtime directory's later mkfifo
 * (see makeFifos). Node has no call that makes a FIFO, hence the child.
 */
const mkfifoCommands: ReadonlyArray<string> = ["/usr/bin/mkfifo", "mkfifo"]

const isAscii = (text: string): boolean => !/[^\x20-\x7e]/.test(text)

/** The mkfifo tried is not there (a spawn that failed, not mkfifo's own failure, which has an exit code). */
class MkfifoMissing extends Data.TaggedError("MkfifoMissing")<{ readonly command: string }> {}

/**
 * One mkfifo child; whether it made them all. `explain`: its stderr is read
 * and a failure is the error with its words; otherwise its stderr is not
 * even piped (a pipe costs a start about 5 ms: a socket pair, Node's stream
 * machinery) and a failure is `false`, for the caller to clean up and ask
 * again with `explain` (see makeFifos).
 */
const mkfifoOnce = (
  command: string,
  paths: ReadonlyArray<string>,
  explain: boolean
): Effect.Effect<boolean, RuntimeDirError | MkfifoMissing> =>
  Effect.callback((resume) => {
    // The C locale spares the child loading a locale (messages are English, as ours are);
    // a path that is not ASCII keeps the user's, in which mkfifo shows it as it is rather than escaped.
    const env = paths.every(isAscii) ? { ...process.env, LC_ALL: "C" } : process.env
    // Named mkfifo in its messages whatever the path; only its errors are read.
    const child = spawn(command, ["-m", "600", "--", ...paths], { argv0: "mkfifo", env, stdio: ["ignore", "ignore", explain ? "pipe" : "ignore"] })
    let stderr = ""
    let done = false
    const finish = (result: Effect.Effect<boolean, RuntimeDirError | MkfifoMissing>) => {
      if (done) return
      done = true
      resume(result)
    }
    const failed = (cause: unknown) =>
      Effect.fail(new RuntimeDirError({ reason: "io", message: `mkfifo failed: ${stderr.trim() || describeError(cause)}`, cause }))
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    child.once("error", (error) =>
      finish(errnoCode(error) === "ENOENT" && child.pid === undefined ? Effect.fail(new MkfifoMissing({ command })) : failed(error)))
    child.once("close", (code, signal) =>
      finish(
        code === 0
          ? Effect.succeed(true)
          : explain
          ? failed(new Error(`Command failed: mkfifo exited with ${code ?? signal}`))
          : Effect.succeed(false)
      ))
    return Effect.sync(() => child.kill())
  })

/**
 * Runs the first mkfifo of `commands` that is there (see mkfifoOnce); the
 * last one's absence is the error. Whether it made them all, and the
 * commands from the one that was there on (for a second mkfifo to skip the missing).
 */
const runMkfifo = (
  paths: ReadonlyArray<string>,
  commands: ReadonlyArray<string>,
  explain: boolean
): Effect.Effect<{ readonly made: boolean; readonly commands: ReadonlyArray<string> }, RuntimeDirError> =>
  Effect.suspend(() => {
    const [command, ...rest] = commands
    if (command === undefined) return Effect.fail(new RuntimeDirError({ reason: "io", message: "mkfifo failed: no mkfifo to run" }))
    return mkfifoOnce(command, paths, explain).pipe(
      Effect.map((made) => ({ made, commands })),
      Effect.catchTag("MkfifoMissing", () =>
        rest.length === 0
          ? Effect.fail(new RuntimeDirError({ reason: "io", message: `mkfifo failed: spawn ${command} ENOENT` }))
          : runMkfifo(paths, rest, explain))
    )
  })

/** Makes the FIFOs with the first mkfifo of `commands` that is there; a failure says mkfifo's own words. */
export const mkfifo = (
  paths: ReadonlyArray<string>,
  commands: ReadonlyArray<string> = mkfifoCommands
): Effect.Effect<void, RuntimeDirError> => Effect.asVoid(runMkfifo(paths, commands, true))

/** Removes each file that is still a FIFO (and, given `made`, still the very one we made). */
const unlinkFifos = (files: ReadonlyArray<string>, made?: ReadonlyMap<string, number>): Effect.Effect<void, RuntimeDirError> =>
  Effect.forEach(files, (file) =>
    Effect.flatMap(lstatOption(file), (found) =>
      Option.isSome(found) && found.value.isFIFO() && (made === undefined || made.get(file) === found.value.ino)
        ? ignoringMissing(attempt(`cannot remove ${file}`, () => fs.unlinkSync(file)))
        : Effect.void), { discard: true })

/** Makes the six FIFOs (0600); each was checked absent under our pid file, so a failure removes only what mkfifo made. */
export const makeFifos = (
  files: ReadonlyArray<string>,
  commands: ReadonlyArray<string> = mkfifoCommands
): Effect.Effect<ReadonlyMap<string, number>, RuntimeDirError> =>
  runMkfifo(files, commands, false).pipe(
    // Failed unexplained: what it made goes, and a second mkfifo (the one that was there), its stderr read,
    // says why (or, the cause gone, makes them).
    Effect.flatMap((ran) => ran.made ? Effect.void : Effect.andThen(unlinkFifos(files), mkfifo(files, ran.commands))),
    Effect.tapError(() => Effect.ignore(unlinkFifos(files))),
    Effect.andThen(Effect.forEach(files, (file) =>
      attempt(`cannot inspect ${file}`, () => fs.lstatSync(file)).pipe(Effect.map((stat) => [file, stat.ino] as const)))),
    Effect.map((entries) => new Map(entries))
  )

/**
 * Lays out the runtime directory for one run: makes it (0700) or checks that
 * it is private to us, claims it with `planckclaw.pid` and the roles it
 * serves itself (`served`, see BridgeClaim), and makes the six FIFOs (0600),
 * replacing those of a dead run. On scope close exactly what this run made
 * goes: its FIFOs, its claims, its pid file, and the directories it made.
 * Refuses a symlink, a directory not private to us, one in use by a live
 * run, and any entry named like a pipe that it may not remove.
 */
export const makeRuntimeDir = (
  runDir: string,
  served: ReadonlyArray<BridgeClaim.Role> = []
): Effect.Effect<FifoPaths, RuntimeDirError, Scope.Scope> =>
  Effect.gen(function*() {
    const paths = fifoPaths(runDir)
    // What this run made goes last, once the bridge processes that joined it have let go of it.
    yield* Effect.acquireRelease(
      claimDirectory(paths.runDir),
      (made) => made.length === 0 ? Effect.void : Effect.andThen(BridgeClaim.othersReleased(paths.runDir), removeMade(made))
    )
    const pidFile = path.join(paths.runDir, pidFileName)
    const stale = yield* Effect.acquireRelease(claimPidFile(paths, pidFile), () => releasePidFile(pidFile))
    // Before the FIFOs: a bridge process joins a run only once they are there (RunningAgent).
    yield* BridgeClaim.clearDead(paths.runDir)
    for (const role of served) yield* BridgeClaim.claim(paths.runDir, role, process.pid)
    yield* unlinkFifos(stale)
    const files = fifoKeys.map((key) => paths[key])
    yield* Effect.acquireRelease(
      makeFifos(files),
      (made) => unlinkFifos(files, made).pipe(Effect.catch((error) => Effect.logWarning(error.message)))
    )
    return paths
  })

/** The pipes every far end and near end of a run opens. */
export class RunPaths extends Context.Service<RunPaths, FifoPaths>()("planckclaw/RunPaths") {}

/**
 * A runtime directory of our own, at PLANCKCLAW_RUN_DIR, for the life of the
 * layer, with the roles whose bridges the run serves itself claimed (see
 * BridgeClaim). (The per-pipe variables are for a bridge process that joins
 * a run; the run itself lays every pipe out in the one directory.)
 */
export const layerServing = (
  served: ReadonlyArray<BridgeClaim.Role>
): Layer.Layer<RunPaths, RuntimeDirError | ConfigError.ConfigError> =>
  Layer.effect(RunPaths, Effect.flatMap(fifoPathsConfig, ({ runDir }) => makeRuntimeDir(runDir, served)))

/** A runtime directory of our own whose pipes others serve (see layerServing). */
export const layer: Layer.Layer<RunPaths, RuntimeDirError | ConfigError.ConfigError> = layerServing([])
