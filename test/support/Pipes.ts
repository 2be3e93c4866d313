/**
 * End-to-end helpers for the named-pipe layer: the built command as a child
 * process that is stopped gracefully when the scope closes, `/bin/sh`
 * one-liners that talk to the FIFOs the way users and the original bridges
 * do, and what a run leaves in its runtime directory. The sandbox, the
 * bounded waits and the process probes are in Sandbox.ts.
 *
 * Every wait is bounded: a test that would hang fails with a `WaitTimedOut`
 * naming what never happened.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, type Duration, Effect, Result, type Scope } from "effect"
import * as RuntimeDir from "../../src/pipes/RuntimeDir.js"
import * as Cli from "./Cli.js"
import { defaultBound, eventually, exited, pidIn, type Sandbox, WaitTimedOut, within } from "./Sandbox.js"

/** The six FIFO names, in the order the runtime directory lists them. */
export const fifoNames = Object.values(RuntimeDir.fifoNames)

// ---------------------------------------------------------------------------
// The built command

export interface Planckclaw extends Cli.Running {
  readonly pid: number
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** How it ended, waiting at most the default bound. */
  readonly ended: Effect.Effect<Cli.CliResult, WaitTimedOut>
  /** Still running? */
  readonly alive: Effect.Effect<boolean>
}

/**
 * Starts `planckclaw ARGS` in the sandbox. When the scope closes a command
 * still running gets SIGTERM first, so it stops its own bridges, and
 * SIGKILL only if it does not end in time.
 */
export const planckclaw = (
  box: Sandbox,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = box.env
): Effect.Effect<Planckclaw, never, Scope.Scope> =>
  Effect.gen(function*() {
    const running = yield* Cli.start(args, { cwd: box.dir, env })
    const proc = running.process
    const alive = Effect.sync(() => proc.exitCode === null && proc.signalCode === null)
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (!(yield* alive)) return
        proc.kill("SIGTERM")
        yield* Effect.ignore(within("a graceful stop", "10 seconds")(running.done))
      })
    )
    return {
      ...running,
      pid: proc.pid ?? -1,
      signal: (signal) => Effect.sync(() => void proc.kill(signal)),
      ended: within(`planckclaw ${args.join(" ")} to exit`)(running.done),
      alive
    }
  })

/** Runs `planckclaw ARGS` to completion with `input` (default none) on stdin, bounded. */
export const planckclawToEnd = (
  box: Sandbox,
  args: ReadonlyArray<string>,
  options: { readonly env?: NodeJS.ProcessEnv; readonly input?: string } = {}
) =>
  within(`planckclaw ${args.join(" ")} to exit`)(
    Cli.run(args, { cwd: box.dir, env: options.env ?? box.env, ...(options.input === undefined ? {} : { input: options.input }) })
  )

/** Waits until `planckclaw run` has laid all six FIFOs. */
export const fifosReady = (runDir: string) =>
  eventually(`the six FIFOs in ${runDir}`, () =>
    fifoNames.every((name) => fs.statSync(path.join(runDir, name)).isFIFO()) ? true : undefined)

/**
 * Waits until an agent reads the interact_in now at `runDir`: a non-blocking
 * open for writing fails (ENXIO) while nobody has the FIFO open for reading,
 * so a FIFO left by a killed run, or one not opened yet, does not count.
 */
export const listening = (runDir: string, bound: Duration.Input = defaultBound) =>
  eventually(`an agent reading ${runDir}/interact_in`, () => {
    fs.closeSync(openInteractIn(runDir))
    return true
  }, bound)

/** Opens interact_in for writing without blocking; fails with ENXIO while no agent reads it. */
export const openInteractIn = (runDir: string): number =>
  fs.openSync(path.join(runDir, "interact_in"), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)

/** Names of the FIFOs still present in `runDir`. */
export const fifosLeft = (runDir: string): Array<string> => fifoNames.filter((name) => fs.existsSync(path.join(runDir, name)))

/** What is left of a runtime directory: `undefined` when it is gone, else its entries. */
export const runDirLeft = (runDir: string): ReadonlyArray<string> | undefined =>
  fs.existsSync(runDir) ? fs.readdirSync(runDir) : undefined

// ---------------------------------------------------------------------------
// Shell

export interface ShellResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `/bin/sh -c script` in its own process group, to completion, within
 * the bound; the group is killed when it is done or given up on.
 */
export const sh = (
  what: string,
  script: string,
  env: Record<string, string> = {}
): Effect.Effect<ShellResult, WaitTimedOut> =>
  Effect.scoped(
    Effect.gen(function*() {
      const child = yield* Effect.acquireRelease(
        Effect.sync(() =>
          spawn("/bin/sh", ["-c", script], {
            env: Cli.baseEnv(env),
            detached: true,
            stdio: ["ignore", "pipe", "pipe"]
          })
        ),
        (child) => Effect.sync(() => void Result.try(() => process.kill(-(child.pid ?? 0), "SIGKILL")))
      )
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => void (stdout += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
      return yield* Effect.callback<ShellResult>((resume) => {
        child.once("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
      }).pipe(within(what))
    })
  )

/** A shell step of a test exited with a non-zero status. */
export class ShellFailed extends Data.TaggedError("ShellFailed")<{ readonly message: string }> {}

/** Like `sh`, but a non-zero status fails the test with the script's stderr; its stdout. */
export const shOk = (
  what: string,
  script: string,
  env: Record<string, string> = {}
): Effect.Effect<string, WaitTimedOut | ShellFailed> =>
  Effect.flatMap(sh(what, script, env), (result) =>
    result.code === 0
      ? Effect.succeed(result.stdout)
      : new ShellFailed({ message: `${what}: sh exited with ${result.code}: ${result.stderr}` }))

/**
 * Writes raw wire bytes to interact_in in one open/write/close, as
 * `printf 'cli\tHello\n' > $RUN/interact_in` does.
 */
export const sendRaw = (runDir: string, wire: string) =>
  shOk(`writing ${JSON.stringify(wire)} to interact_in`, `printf '%s' "$WIRE" > "$RUN/interact_in"`, {
    WIRE: wire,
    RUN: runDir
  })

/**
 * Reads `count` lines from interact_out with the shell's `read` (which takes
 * one byte at a time, so nothing past the last line is consumed); the lines
 * as they were on the wire.
 */
export const receiveRaw = (runDir: string, count: number) =>
  shOk(
    `${count} line(s) on interact_out`,
    `i=0
    while [ "$i" -lt "$COUNT" ]; do
      IFS= read -r line || exit 3
      printf '%s\\n' "$line"
      i=$((i + 1))
    done < "$RUN/interact_out"`,
    { COUNT: String(count), RUN: runDir }
  ).pipe(Effect.map((stdout) => stdout.split("\n").slice(0, -1)))

/** Pid files and the exit of the processes they name. */
export const allExited = (box: Sandbox, pidFiles: ReadonlyArray<string>) =>
  Effect.forEach(pidFiles, (name) => Effect.flatMap(pidIn(box.path(name)), (pid) => exited(name, pid)), {
    discard: true
  })
