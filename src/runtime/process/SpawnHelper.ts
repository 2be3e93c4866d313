/**
 * Claws run from a spawn helper: one small Node process of ours
 * (SpawnHelperMain.ts) that starts them and hands back what they printed.
 *
 * Why: Node's spawn forks the whole calling process and blocks its one
 * thread until the child has exec'd. For an agent that was 4–8 ms of its
 * thread per claw call here, and more as its heap grows, while no other
 * turn moved (serve holds thousands of agents on that thread). Afterwards,
 * every page the agent wrote took a copy-on-write fault once
 * (bench/fork-spill.mjs). The helper pays the fork instead, on its own
 * thread; this process writes one line and reads one back.
 *
 * It is a scoped service (`layer`, with the watchdog it needs): the command
 * provides it at its entry, and its scope's end (the end of the run) ends
 * the helper as this process's end would. It is started at the first run,
 * with an environment of nothing but PATH
 * (it holds no secret: each request carries the claw's own environment,
 * secrets withheld), in a session of its own (Ctrl-C in the terminal is
 * this process's to handle). It never keeps this process alive by itself,
 * and it ends when this process ends, however that happens: it reads end of
 * file on its stdin, kills every group it still runs and exits. Should it
 * die, its own watchdog kills those groups, the runs waiting for it fail
 * saying so, and the next run starts a new helper. One that does not
 * answer a stop within 5 s is killed, so it cannot hold a shutdown. Should
 * it not start, or end by itself before answering anything, runs go on
 * from this process (with the same watchdog), warned once.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { printable } from "../Printable.js"
import * as ChildProcess from "./ChildProcess.js"
import * as Watchdog from "./Watchdog.js"
import { current, type Helper, hold, logged, type Pending, send, type SpawnHelperDied, type State } from "./SpawnHelperProcess.js"
import { maxLineBytes, type ToHelper } from "./SpawnWire.js"

export { SpawnHelperDied } from "./SpawnHelperProcess.js"

/** How long an interrupted run waits for the helper to say its group is gone. */
const stopBound = Duration.seconds(5)

/**
 * A run's line, or why it cannot be sent: a line longer than the helper
 * frames would end the helper, and every run it holds for other callers
 * (in `serve`, other agents' claws), so an input that large is refused here.
 */
const runLine = (id: number, request: ChildProcess.RunRequest): Result.Result<string, ChildProcess.SpawnError> => {
  const line = JSON.stringify({ _tag: "Run", id, ...request, args: [...request.args], env: { ...request.env } } satisfies ToHelper)
  const bytes = Buffer.byteLength(line)
  return bytes <= maxLineBytes ? Result.succeed(`${line}\n`) : Result.fail(
    new ChildProcess.SpawnError({
      message: `cannot run ${printable(request.command)}: its arguments and environment take ${bytes} bytes, more than a run may pass (${maxLineBytes})`,
      cause: undefined
    })
  )
}

const inHelper = (helper: Helper, request: ChildProcess.RunRequest) =>
  Effect.suspend(() => {
    const id = helper.nextId++
    const line = runLine(id, request)
    return Result.isFailure(line) ? Effect.fail(line.failure) : sent(helper, id, request.command, line.success)
  })

const sent = (helper: Helper, id: number, command: string, line: string) =>
  Effect.callback<ChildProcess.RunOutcome, ChildProcess.SpawnError | SpawnHelperDied>((resume) => {
    const pending: Pending = { command, resume }
    helper.pending.set(id, pending)
    if (helper.pending.size === 1) hold(helper, true)
    helper.child.stdin?.write(line)
    return Effect.callback<void>((stopped) => {
      if (!helper.pending.has(id)) return stopped(Effect.void)
      pending.onStopped = (warnings) => stopped(logged(warnings))
      send(helper, { _tag: "Stop", id })
    }).pipe(
      // A helper that does not answer (stopped by someone, or stuck) must not hold a shutdown:
      // killed, its watchdog kills the group. (The wait is made interruptible, or the bound could not end it.)
      Effect.interruptible,
      Effect.timeout(stopBound),
      Effect.catchTag("TimeoutError", () =>
        Effect.sync(() => {
          helper.killedBecause ??= `it did not answer a stop within ${Duration.format(stopBound)}`
          helper.child.kill("SIGKILL")
        }))
    )
  })

export interface SpawnHelperService {
  /**
   * ChildProcess.run, from the spawn helper. Interrupting it kills the whole
   * group and returns once the helper has reaped it, as ChildProcess.run does.
   */
  readonly run: (
    request: ChildProcess.RunRequest
  ) => Effect.Effect<ChildProcess.RunOutcome, ChildProcess.SpawnError | SpawnHelperDied>
  /**
   * Whether claws would start from the helper (`planckclaw doctor`): a
   * command that does nothing, run through it. Its pid, or why claws start
   * from this process instead.
   */
  readonly probe: Effect.Effect<Result.Result<number, string>>
  /** The running helper's pid, if one runs (for tests). */
  readonly helperPid: () => number | undefined
}

export class SpawnHelper extends Context.Service<SpawnHelper, SpawnHelperService>()("planckclaw/SpawnHelper") {}

/**
 * The spawn helper of a scope: started at the first run; at the scope's
 * end, told end of file (as this process's end would), so it kills what it
 * still runs and exits. Runs that go on from this process use `watchdog`.
 */
export const make: Effect.Effect<SpawnHelperService, never, Scope.Scope | Watchdog.Watchdog> = Effect.gen(function*() {
  const watchdog = yield* Watchdog.Watchdog
  const state: State = { helper: undefined, unavailable: undefined, warned: false }
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      state.unavailable = "the spawn helper's scope has ended (planckclaw is stopping)"
      state.helper?.child.stdin?.end()
    })
  )

  const run = (request: ChildProcess.RunRequest): Effect.Effect<ChildProcess.RunOutcome, ChildProcess.SpawnError | SpawnHelperDied> =>
    Effect.suspend(() => {
      const running = current(state)
      if (Result.isSuccess(running)) return inHelper(running.success, request)
      const warning = state.warned ? Effect.void : Effect.logWarning(`claws are started from this process: ${running.failure}`)
      state.warned = true
      return Effect.andThen(warning, Effect.provideService(ChildProcess.run(request), Watchdog.Watchdog, watchdog))
    })

  const probe: Effect.Effect<Result.Result<number, string>> = Effect.suspend(() => {
    const running = current(state)
    if (Result.isFailure(running)) return Effect.succeed(Result.fail(running.failure))
    const { pid } = running.success
    return inHelper(running.success, {
      command: "/bin/sh",
      args: ["-c", "exit 0"],
      cwd: "/",
      env: { PATH: "/usr/bin:/bin" },
      stdoutMax: 0,
      stderrMax: 1024,
      floodAllowance: 0
    }).pipe(
      Effect.map((outcome) =>
        outcome.exitCode === 0
          ? Result.succeed(pid)
          : Result.fail(`a command that does nothing ended with ${outcome.signal ?? `exit code ${outcome.exitCode}`}`)
      ),
      Effect.catch((error) => Effect.succeed(Result.fail(error.message)))
    )
  })

  return { run, probe, helperPid: () => state.helper?.pid }
})

/** The spawn helper and the watchdog of a command's run: provided at its entry, ended with it. */
export const layer: Layer.Layer<SpawnHelper | Watchdog.Watchdog> = Layer.effect(SpawnHelper, make).pipe(
  Layer.provideMerge(Watchdog.layer)
)

/** `probe` of the spawn helper in context. */
export const probe: Effect.Effect<Result.Result<number, string>, never, SpawnHelper> = Effect.flatMap(SpawnHelper, (helper) => helper.probe)
