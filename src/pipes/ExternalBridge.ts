/**
 * A bridge that is an executable (the original shell bridges, or anything
 * that speaks the FIFO protocol on the far end of one pipe pair), run as a
 * supervised child process for the life of a scope.
 *
 * - Environment: ours, minus the secrets, plus the FIFO paths; a secret is
 *   passed only when the caller names it (the brain bridge needs the API key,
 *   the Discord bridge the bot token, nothing else needs either).
 * - Own process group, so stopping it stops everything it started: SIGTERM to
 *   the group, SIGKILL after a grace period. A group it leaves behind when it
 *   exits on its own is SIGKILLed before the restart. While it runs, the
 *   group is listed with the process's watchdog, which stops it should we die
 *   without closing our scopes (SIGKILL): no bridge outlives its agent.
 * - Restarted under an explicit backoff `Schedule` whenever it exits (or
 *   only when it fails); a run that lasted `healthyAfter` starts the backoff
 *   over.
 * - stderr is ours; stdout too for an interact bridge, whose replies may be
 *   printed there, while any other (`stdout: "stderr"`) writes its output to
 *   our stderr, so our stdout carries only replies. stdin is closed unless
 *   `stdin: "inherit"` (a terminal bridge): having its own session, the child
 *   may read our terminal without being stopped by job control.
 */
import * as fs from "node:fs"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { readShebang } from "../claws/ClawInterpreter.js"
import { isSecretName, type SecretName, secretNames } from "../config/Secrets.js"
import { type FifoPaths, fifoEnvNames } from "./FifoPaths.js"
import * as ProcessGroup from "../runtime/process/ProcessGroup.js"
import * as Watchdog from "../runtime/process/Watchdog.js"

/** The executable cannot be started (not an executable file); the message names the flag that chose it. */
export class ExternalBridgeError extends Data.TaggedError("ExternalBridgeError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** How one run of the bridge ended. */
export interface BridgeExit {
  readonly code: number | null
  readonly signal: string | null
  /** Set when the process could not be started at all. */
  readonly error?: string
}

export interface ExternalBridgeOptions {
  /** Used in logs, e.g. `brain`. */
  readonly name: string
  readonly command: string
  readonly args?: ReadonlyArray<string>
  readonly paths: FifoPaths
  /** The only secrets the child receives. */
  readonly secrets?: Partial<Record<SecretName, Redacted.Redacted<string>>>
  /** Extra variables (settings the bridge needs, e.g. DISCORD_CHANNEL_ID); secret names are ignored here. */
  readonly extraEnv?: Readonly<Record<string, string>>
  /** The environment to start from; default ours. */
  readonly baseEnv?: Readonly<Record<string, string | undefined>>
  readonly stdin?: "ignore" | "inherit"
  /** `inherit` (default): the child's stdout is ours; `stderr`: it goes to our stderr. */
  readonly stdout?: "inherit" | "stderr"
  /**
   * `always` (default) restarts after any exit; `on-failure` lets a clean
   * exit (code 0) end the bridge, as a terminal bridge does on end of input.
   */
  readonly restart?: "always" | "on-failure"
  /** Delay before each restart; default exponential from 1 s, capped at 1 min. */
  readonly restartSchedule?: Schedule.Schedule<unknown, BridgeExit>
  /** A run at least this long resets the backoff; default 1 minute. */
  readonly healthyAfter?: Duration.Input
  /** Time between SIGTERM and SIGKILL on shutdown; default 5 seconds. */
  readonly killGrace?: Duration.Input
}

export interface ExternalBridge {
  readonly name: string
  /** How many times the executable was started. */
  readonly starts: Effect.Effect<number>
  /** The running child's pid (also its process group id). */
  readonly pid: Effect.Effect<Option.Option<number>>
  /**
   * The last exit, once the bridge will not be started again (a clean exit
   * under `restart: "on-failure"`, or the schedule gave up); waits forever
   * while it is supervised.
   */
  readonly finished: Effect.Effect<BridgeExit>
  /**
   * Runs `onExit` after each exit of the executable, for the life of the
   * caller's scope: once its process group is gone and before the restart
   * (the near end's Exchange forgets what the dead process owed).
   */
  readonly exits: (onExit: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
}

export const defaultRestartSchedule: Schedule.Schedule<unknown, BridgeExit> = Schedule.min([
  Schedule.exponential("1 second"),
  Schedule.spaced("1 minute")
])

/** The child's environment, as described in the module comment. */
export const bridgeEnv = (
  options: Pick<ExternalBridgeOptions, "paths" | "secrets" | "extraEnv" | "baseEnv">
): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(options.baseEnv ?? process.env)) {
    if (value !== undefined && !isSecretName(key)) env[key] = value
  }
  for (const [key, value] of Object.entries(options.extraEnv ?? {})) {
    if (!isSecretName(key)) env[key] = value
  }
  for (const key of Object.keys(fifoEnvNames) as Array<keyof typeof fifoEnvNames>) {
    env[fifoEnvNames[key]] = options.paths[key]
  }
  for (const name of secretNames) {
    const secret = options.secrets?.[name]
    if (secret !== undefined) env[name] = Redacted.value(secret)
  }
  return env
}

const describeExit = (exit: BridgeExit): string =>
  exit.error !== undefined
    ? `could not start: ${exit.error}`
    : exit.signal !== null
    ? `killed by ${exit.signal}`
    : `exited with code ${exit.code}`

const signalGroup = (pgid: number, signal: NodeJS.Signals): Effect.Effect<void> =>
  Effect.sync(() => ProcessGroup.signalGroup(pgid, signal))

interface RunningChild {
  readonly pid: number | undefined
  readonly exited: Deferred.Deferred<BridgeExit>
}

// A Buffer path: a `#!` interpreter's bytes, whatever their encoding (relative ones resolve against our directory, the bridge's).
const isExecutableFile = (file: string | Buffer): boolean =>
  Result.isSuccess(Result.try(() => fs.accessSync(file, fs.constants.X_OK))) &&
  Result.getOrElse(Result.try(() => fs.statSync(file).isFile()), () => false)

/**
 * What stops `command` (a path) from being started, in words for its user;
 * undefined when nothing does. A script whose `#!` interpreter is missing
 * would fail every restart with a shell's "not found" for a file that is
 * there, so it is named here.
 */
export const executableProblem = (command: string): string | undefined => {
  if (!isExecutableFile(command)) return `bridge ${command} is not an executable file`
  // A file we cannot read is the kernel's to judge: a binary needs only its execute bit.
  const interpreter = readShebang(command)?.interpreter
  if (interpreter === undefined || interpreter.length === 0 || isExecutableFile(interpreter)) return undefined
  const name = interpreter.toString("utf8")
  const crlf = name.endsWith("\r") ? " (the file has Windows line endings: convert them, e.g. with dos2unix)" : ""
  return `bridge ${command} names ${JSON.stringify(name)} on its #! line, which is not an executable file${crlf}`
}

/** Checks up front that a path command can be executed, so a typo fails the start instead of looping restarts. */
const checkExecutable = (command: string): Effect.Effect<void, ExternalBridgeError> =>
  Effect.suspend(() => {
    const problem = command.includes("/") ? executableProblem(command) : undefined
    return problem === undefined ? Effect.void : Effect.fail(new ExternalBridgeError({ message: problem }))
  })

export const make = (
  options: ExternalBridgeOptions
): Effect.Effect<ExternalBridge, ExternalBridgeError, Scope.Scope | Watchdog.Watchdog> =>
  Effect.gen(function*() {
    yield* checkExecutable(options.command)
    const watchdog = yield* Watchdog.Watchdog
    const env = bridgeEnv(options)
    const killGrace = Duration.fromInputUnsafe(options.killGrace ?? Duration.seconds(5))
    const healthyAfter = Duration.toMillis(options.healthyAfter ?? Duration.minutes(1))
    const starts = yield* Ref.make(0)
    const pid = yield* Ref.make(Option.none<number>())
    const finished = yield* Deferred.make<BridgeExit>()

    const start = Effect.gen(function*() {
      const exited = yield* Deferred.make<BridgeExit>()
      // Listed with the watchdog as it starts: a kill of this process a moment later must not leave it running.
      const spawned = watchdog.spawnGuarded(options.command, options.args ?? [], {
        env,
        stdio: [options.stdin ?? "ignore", options.stdout === "stderr" ? 2 : "inherit", "inherit"]
      })
      yield* Ref.update(starts, (n) => n + 1)
      if (Result.isFailure(spawned)) {
        yield* Deferred.succeed(exited, { code: null, signal: null, error: spawned.failure.message })
        return { pid: undefined, exited } satisfies RunningChild
      }
      const child = spawned.success
      child.once("exit", (code, signal) => Deferred.doneUnsafe(exited, Exit.succeed({ code, signal })))
      // 'error' also reports failed kills of a live child; only a failed start ends the run.
      child.on("error", (error) => {
        if (child.pid === undefined) {
          Deferred.doneUnsafe(exited, Exit.succeed({ code: null, signal: null, error: error.message }))
        }
      })
      yield* Ref.set(pid, Option.fromNullishOr(child.pid))
      return { pid: child.pid, exited } satisfies RunningChild
    })

    const stop = (child: RunningChild) =>
      Effect.gen(function*() {
        yield* Ref.set(pid, Option.none())
        if (child.pid === undefined) return
        if (!(yield* Deferred.isDone(child.exited))) {
          yield* signalGroup(child.pid, "SIGTERM")
          // Release runs uninterruptibly; the wait must stay interruptible for the timeout to cut it.
          const exited = yield* Effect.interruptible(Deferred.await(child.exited)).pipe(
            Effect.timeout(killGrace),
            Effect.option
          )
          if (Option.isNone(exited)) {
            yield* Effect.logWarning(`bridge ${options.name} ignored SIGTERM for ${Duration.format(killGrace)}; killing it`)
          }
        }
        // Whatever the leader left behind in its group goes too.
        yield* signalGroup(child.pid, "SIGKILL")
        yield* Deferred.await(child.exited)
        watchdog.untrackGroup(child.pid)
      })

    const onExits = new Set<Effect.Effect<void>>()
    const exits: ExternalBridge["exits"] = (onExit) =>
      Effect.acquireRelease(Effect.sync(() => void onExits.add(onExit)), () => Effect.sync(() => void onExits.delete(onExit)))

    const runOnce = Effect.acquireUseRelease(start, (child) => Deferred.await(child.exited), stop).pipe(
      Effect.tap(Effect.suspend(() => Effect.forEach(onExits, (onExit) => onExit, { discard: true })))
    )

    const supervise = Effect.gen(function*() {
      const schedule = options.restartSchedule ?? defaultRestartSchedule
      // The schedule's step, which sleeps each delay; made afresh to start the backoff over.
      let backoff = yield* Schedule.toStepWithSleep(schedule)
      while (true) {
        const startedAt = yield* Clock.currentTimeMillis
        const exit = yield* runOnce
        if (options.restart === "on-failure" && exit.code === 0) {
          yield* Effect.logInfo(`bridge ${options.name} finished`)
          return yield* Deferred.succeed(finished, exit)
        }
        if ((yield* Clock.currentTimeMillis) - startedAt >= healthyAfter) backoff = yield* Schedule.toStepWithSleep(schedule)
        yield* Effect.logWarning(`bridge ${options.name} ${describeExit(exit)}; restarting after backoff`)
        const again = yield* backoff(exit).pipe(Effect.option)
        if (Option.isNone(again)) {
          yield* Effect.logError(`bridge ${options.name} keeps failing; restart schedule exhausted, giving up`)
          return yield* Deferred.succeed(finished, exit)
        }
      }
    }).pipe(Effect.annotateLogs({ bridge: options.name }))

    yield* Effect.forkScoped(supervise)
    return { name: options.name, starts: Ref.get(starts), pid: Ref.get(pid), finished: Deferred.await(finished), exits }
  })
