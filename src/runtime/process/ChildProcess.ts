/**
 * Runs one short-lived child process in a session of its own and collects
 * its output under a byte cap.
 *
 * The child is spawned detached (setsid), so its pid is also its session
 * and process group id, and everything it forks can be killed at once: the
 * group, and any group made within the session (GNU `timeout` makes one).
 * The session gets SIGKILL when the main process exits (so a forgotten
 * `sleep 1000 &` that still holds stdout cannot keep the call waiting),
 * when it floods stdout or stderr, and when the run is interrupted (a
 * caller's timeout, agent shutdown): the release waits until Node has reaped the
 * main process, so no zombie is left behind by us. Grandchildren are
 * reparented to init, which reaps them. Once the main process has exited
 * and its session is killed, whatever still holds its stdout or stderr is
 * outside it (a daemon started with setsid): the run waits `outputGrace`
 * for end of file, then answers with what was read, and logs a warning. While it runs, the group is listed
 * with the watchdog in context (Watchdog), which kills its session should
 * the agent die without closing its scopes (SIGKILL).
 */
import type * as NodeChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { describeError } from "../Errors.js"
import { printable } from "../Printable.js"
import { heldBy } from "./PidLiveness.js"
import { signalSession } from "./ProcessGroup.js"
import { Watchdog, type WatchdogService } from "./Watchdog.js"

/**
 * Where a run's process works: a directory that exists, or a private one
 * made for the run in `parent` (see `privateDirectory`) and removed with
 * everything in it after the run.
 */
export type WorkingDirectory = string | { readonly privateIn: string; readonly prefix: string }

export interface RunRequest {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: WorkingDirectory
  readonly env: Readonly<Record<string, string>>
  /** Stdout bytes kept; the rest is discarded and `stdoutTruncated` set. */
  readonly stdoutMax: number
  /** Stderr bytes kept, for an excerpt in error reports. */
  readonly stderrMax: number
  /**
   * Bytes tolerated on a stream past what is kept of it before the group is
   * killed: a tool that prints a little too much still finishes with its
   * exit status; an endless writer (read even to discard: half a core at
   * 1 GB/s here) is stopped.
   */
  readonly floodAllowance: number
}

/** The stream whose flood got the group killed. */
export type Flooded = "stdout" | "stderr"

export interface RunOutcome {
  readonly stdout: Uint8Array
  readonly stdoutTruncated: boolean
  readonly stderr: Uint8Array
  readonly stderrTruncated: boolean
  /** `null` when the process ended by a signal. */
  readonly exitCode: number | null
  readonly signal: NodeJS.Signals | null
  /** The group was killed because this stream went past what is kept of it plus `floodAllowance`; `null` if not. */
  readonly flooded: Flooded | null
}

export class SpawnError extends Data.TaggedError("SpawnError")<{
  readonly message: string
  readonly cause: unknown
}> {}

/** Keeps the first `max` bytes of a stream and counts the rest. */
class CappedBytes {
  private readonly chunks: Array<Buffer> = []
  private kept = 0
  seen = 0

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.seen += chunk.length
    const room = this.max - this.kept
    if (room <= 0) return
    const taken = chunk.length <= room ? chunk : chunk.subarray(0, room)
    this.chunks.push(taken)
    this.kept += taken.length
  }

  get truncated(): boolean {
    return this.seen > this.max
  }

  bytes(): Uint8Array {
    return Buffer.concat(this.chunks)
  }
}

/** How long a run waits for end of file on its output once the main process exited and its session was killed. */
export const outputGrace = Duration.seconds(1)

interface Ends {
  /** Completed at `close`: end of file on both outputs, the main process reaped. */
  readonly done: Deferred.Deferred<RunOutcome, SpawnError>
  /** Completed once Node has seen the main process exit (and reaped it), its session killed. */
  readonly exit: Deferred.Deferred<void>
}

interface Running {
  readonly child: NodeChildProcess.ChildProcess
  /** What was read so far, with the main process's exit status: the outcome should end of file not come. */
  readonly outcomeSoFar: () => RunOutcome
  /** Set once Node has seen the main process exit (and reaped it). */
  exited: boolean
}

/**
 * Spawns (through the watchdog's gate) and wires every listener in one
 * synchronous step, so no event can fire between the spawn and the listener
 * that must see it.
 */
const start = (
  { spawnGuarded, untrackGroup }: WatchdogService,
  request: RunRequest,
  cwd: string,
  { done, exit }: Ends
): Result.Result<Running, SpawnError> =>
  spawnGuarded(request.command, request.args, { cwd, env: request.env, stdio: ["ignore", "pipe", "pipe"] }).pipe(
    Result.mapError((failed) =>
      new SpawnError({ message: printable(`cannot start ${request.command}: ${failed.message}`), cause: failed.cause })
    ),
    Result.map((child): Running => {
      const stdout = new CappedBytes(request.stdoutMax)
      const stderr = new CappedBytes(request.stderrMax)
      let flooded: Flooded | null = null
      let exitStatus: { readonly code: number | null; readonly signal: NodeJS.Signals | null } = { code: null, signal: null }
      const outcome = (exitCode: number | null, signal: NodeJS.Signals | null): RunOutcome => ({
        stdout: stdout.bytes(),
        stdoutTruncated: stdout.truncated,
        stderr: stderr.bytes(),
        stderrTruncated: stderr.truncated,
        exitCode,
        signal,
        flooded
      })
      const running: Running = {
        child,
        outcomeSoFar: () => outcome(exitStatus.code, exitStatus.signal),
        exited: false
      }

      const capped = (stream: Flooded, bytes: CappedBytes, max: number) => (chunk: Buffer) => {
        bytes.push(chunk)
        if (flooded === null && bytes.seen > max + request.floodAllowance && child.pid !== undefined) {
          flooded = stream
          signalSession(child.pid, "SIGKILL")
        }
      }
      child.stdout?.on("data", capped("stdout", stdout, request.stdoutMax))
      child.stderr?.on("data", capped("stderr", stderr, request.stderrMax))
      child.on("exit", (code: number | null, signal: NodeJS.Signals | null) => {
        running.exited = true
        exitStatus = { code, signal }
        if (child.pid !== undefined) {
          signalSession(child.pid, "SIGKILL")
          untrackGroup(child.pid)
        }
        Deferred.doneUnsafe(exit, Exit.void)
      })
      child.on("error", (cause) => {
        // Spawn failures (EAGAIN, ENOENT) arrive here, without `close`
        // being guaranteed.
        Deferred.doneUnsafe(
          done,
          Exit.fail(new SpawnError({ message: printable(`cannot start ${request.command}: ${describeError(cause)}`), cause }))
        )
      })
      child.on("close", (exitCode: number | null, signal: NodeJS.Signals | null) => {
        Deferred.doneUnsafe(done, Exit.succeed(outcome(exitCode, signal)))
      })
      return running
    })
  )

/** Kills the session unless the main process already exited, then waits for Node to reap it. */
const stop = (running: Running): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const { child } = running
    child.stdout?.destroy()
    child.stderr?.destroy()
    if (running.exited || child.pid === undefined) {
      resume(Effect.void)
      return
    }
    child.once("exit", () => resume(Effect.void))
    signalSession(child.pid, "SIGKILL")
  })

/**
 * The parents and prefixes swept in this process (see sweepLeftovers): once
 * each. Process-wide by nature: what a sweep removes was left by other
 * processes, now dead, and is the same whichever scope of this one sweeps.
 */
const swept = new Set<string>()

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
    Result.try(() => fs.rmSync(directory, { recursive: true, force: true }))
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
      Result.match(Result.try(() => fs.rmSync(directory, { recursive: true, force: true })), {
        onFailure: (cause) => Effect.logWarning(`cannot remove the working directory ${directory}: ${describeError(cause)}`),
        onSuccess: () => Effect.void
      })
  )

/**
 * Runs the request to completion. Interrupting the returned effect kills the
 * whole process group; apply a timeout with `Effect.timeout*` on the result.
 */
export const run = (request: RunRequest): Effect.Effect<RunOutcome, SpawnError, Watchdog> =>
  typeof request.cwd === "string"
    ? runIn(request, request.cwd)
    // The directory outlives the process group: `runIn` returns (or is
    // interrupted) only once the group is killed and reaped.
    : Effect.scoped(Effect.flatMap(privateDirectory(request.cwd.privateIn, request.cwd.prefix), (cwd) => runIn(request, cwd)))

const runIn = (request: RunRequest, cwd: string): Effect.Effect<RunOutcome, SpawnError, Watchdog> =>
  Effect.gen(function*() {
    const watchdog = yield* Watchdog
    const ends: Ends = { done: yield* Deferred.make<RunOutcome, SpawnError>(), exit: yield* Deferred.make<void>() }
    return yield* Effect.acquireRelease(Effect.suspend(() => Effect.fromResult(start(watchdog, request, cwd, ends))), stop).pipe(
      Effect.flatMap((running) => Effect.raceFirst(Deferred.await(ends.done), heldOpen(request, running, ends))),
      Effect.scoped
    )
  })

/**
 * The outcome as read `outputGrace` after the main process exited: its
 * session is killed by then, so what still holds its output is a process
 * outside it, which could hold it for as long as it lives. (Wins only when
 * end of file did not come first.)
 */
const heldOpen = (request: RunRequest, running: Running, ends: Ends): Effect.Effect<RunOutcome> =>
  Deferred.await(ends.exit).pipe(
    Effect.andThen(Effect.sleep(outputGrace)),
    Effect.andThen(Effect.suspend(() =>
      Effect.as(
        Effect.logWarning(
          `${printable(request.command)} exited, but a process outside its session (started with setsid?) still held its output open ` +
            `${Duration.format(outputGrace)} later: answered with what it printed by then`
        ),
        running.outcomeSoFar()
      )
    ))
  )
