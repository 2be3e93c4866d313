/**
 * One child process of a run (ChildProcess.run), spawned and wired: its
 * output collected under the caps, its session killed when it floods or
 * when the main process exits, and killed then reaped when the run stops.
 */
import type * as NodeChildProcess from "node:child_process"
import * as Path from "node:path"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import { describeError } from "../Errors.js"
import { printable } from "../Printable.js"
import { type Flooded, type RunOutcome, type RunRequest, SpawnError } from "./ChildRun.js"
import { signalSession } from "./ProcessGroup.js"
import type { WatchdogService } from "./Watchdog.js"

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

export interface Ends {
  /** Completed at `close`: end of file on both outputs, the main process reaped. */
  readonly done: Deferred.Deferred<RunOutcome, SpawnError>
  /** Completed once Node has seen the main process exit (and reaped it), its session killed. */
  readonly exit: Deferred.Deferred<void>
}

export interface Running {
  readonly child: NodeChildProcess.ChildProcess
  /** What was read so far, with the main process's exit status: the outcome should end of file not come. */
  readonly outcomeSoFar: () => RunOutcome
  /** Set once Node has seen the main process exit (and reaped it). */
  exited: boolean
}

/**
 * The child's environment in `cwd`: PWD names it and OLDPWD is gone, as in a
 * shell started there. Inherited, they named this process's directories, and
 * a script that trusts `$PWD` (`cd "$PWD/data"`) would act there.
 */
const environmentIn = (env: Readonly<Record<string, string>>, cwd: string): Record<string, string> => {
  const { OLDPWD: _oldpwd, ...rest } = env
  return { ...rest, PWD: Path.resolve(cwd) }
}

/**
 * Spawns (through the watchdog's gate) and wires every listener in one
 * synchronous step, so no event can fire between the spawn and the listener
 * that must see it.
 */
export const start = (
  { spawnGuarded, untrackGroup }: WatchdogService,
  request: RunRequest,
  cwd: string,
  { done, exit }: Ends
): Result.Result<Running, SpawnError> =>
  spawnGuarded(request.command, request.args, { cwd, env: environmentIn(request.env, cwd), stdio: ["ignore", "pipe", "pipe"] }).pipe(
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
export const stop = (running: Running): Effect.Effect<void> =>
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
 * The outcome as read `outputGrace` after the main process exited: its
 * session is killed by then, so what still holds its output is a process
 * outside it, which could hold it for as long as it lives. (Wins only when
 * end of file did not come first.)
 */
export const heldOpen = (request: RunRequest, running: Running, ends: Ends): Effect.Effect<RunOutcome> =>
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
