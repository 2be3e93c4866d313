/**
 * End-to-end helpers for the named-pipe layer: a sandbox (working, memory
 * and runtime directories in one temp dir), the built command as a child
 * process that is stopped gracefully when the scope closes, `/bin/sh`
 * one-liners that talk to the FIFOs the way users and the original bridges
 * do, and liveness checks on processes.
 *
 * Every wait is bounded: a test that would hang fails with a `WaitTimedOut`
 * naming what never happened.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Duration, Effect, Either, Schedule, type Scope } from "effect"
import * as Cli from "./Cli.js"
import { tempDir } from "./Harness.js"

export const fifoNames = ["interact_in", "interact_out", "brain_in", "brain_out", "claw_in", "claw_out"] as const

/** Something a test waited for did not happen within its bound. */
export class WaitTimedOut extends Data.TaggedError("WaitTimedOut")<{ readonly message: string }> {}

/** Generous: a loaded two-core machine takes seconds to start Node. Never an assertion on speed. */
export const defaultBound = Duration.seconds(20)

/** Bounds a wait; past `bound` the test fails naming `what`. */
export const within = (what: string, bound: Duration.DurationInput = defaultBound) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | WaitTimedOut, R> =>
  Effect.timeoutFail(effect, {
    duration: bound,
    onTimeout: () => new WaitTimedOut({ message: `waited ${Duration.format(bound)} for ${what}` })
  })

class NotYet extends Data.TaggedError("NotYet") {}

/** Polls `probe` (a throw counts as "not yet") until it returns a value. */
export const eventually = <A>(
  what: string,
  probe: () => A | undefined,
  bound: Duration.DurationInput = defaultBound
): Effect.Effect<A, WaitTimedOut> =>
  Effect.suspend(() => {
    const value = Either.getOrUndefined(Either.try(probe))
    return value === undefined ? Effect.fail(new NotYet()) : Effect.succeed(value)
  }).pipe(
    // Retries until `within` gives up, so NotYet never escapes.
    Effect.retry(Schedule.spaced("25 millis")),
    Effect.catchTag("NotYet", () => Effect.never),
    within(what, bound)
  )

// ---------------------------------------------------------------------------
// Processes

export const procState = (pid: number): string | undefined => {
  const stat = Either.getOrUndefined(Either.try(() => fs.readFileSync(`/proc/${pid}/stat`, "utf8")))
  // The state follows the parenthesised command name, which may itself hold spaces or parentheses.
  return stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
}

/**
 * Whether `pid` is a live process. A zombie (`Z`) is dead: it only waits
 * for its parent (init, for an orphan) to collect its status.
 */
export const isRunning = (pid: number): boolean => {
  const probe = Either.try(() => process.kill(pid, 0))
  if (Either.isLeft(probe)) return (probe.left as NodeJS.ErrnoException).code === "EPERM"
  return procState(pid) !== "Z"
}

/** Waits until `pid` is gone (`process.kill(pid, 0)` says ESRCH, or only a zombie is left). */
export const exited = (what: string, pid: number) =>
  eventually(`${what} (pid ${pid}) to exit`, () => (isRunning(pid) ? undefined : true))

/** The pid a script wrote into `file`, once it has. */
export const pidIn = (file: string) =>
  eventually(`a pid in ${path.basename(file)}`, () => {
    const pid = Number.parseInt(fs.readFileSync(file, "utf8"), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  })

/**
 * Processes whose command line or environment mentions `marker` (a sandbox
 * path): the commands and scripts a test started, and whatever those started
 * in turn (they inherit PLANCKCLAW_RUN_DIR).
 */
const processesMentioning = (marker: string): Array<number> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    const pid = Number(entry)
    if (!Number.isSafeInteger(pid) || pid === process.pid) return []
    const mentions = (file: string) =>
      Either.getOrElse(Either.try(() => fs.readFileSync(`/proc/${pid}/${file}`, "utf8").includes(marker)), () => false)
    return mentions("cmdline") || mentions("environ") ? [pid] : []
  })

// ---------------------------------------------------------------------------
// Sandbox

export interface Sandbox {
  /** The working directory of every command (where config.env would be read). */
  readonly dir: string
  /** PLANCKCLAW_RUN_DIR: not created, `planckclaw run` lays it out. */
  readonly runDir: string
  /** PLANCKCLAW_DIR. */
  readonly memory: string
  /** CLAWS_DIR: empty unless a test adds claws, so the agent has no tools by default. */
  readonly claws: string
  /** A clean environment with the four directories above, plus the test's settings. */
  readonly env: NodeJS.ProcessEnv
  readonly path: (name: string) => string
  /** Contents of a sandbox file, `undefined` when absent. */
  readonly read: (name: string) => string | undefined
  /** Writes an executable `/bin/sh` script (`D` holds the sandbox path) and returns its path. */
  readonly script: (name: string, body: string) => string
}

export const sandbox = (settings: Record<string, string> = {}): Effect.Effect<Sandbox, never, Scope.Scope> =>
  Effect.gen(function*() {
    const dir = fs.realpathSync(yield* tempDir("planckclaw-pipes-"))
    // Runs before the temp dir goes (finalizers run in reverse): a safety net for a failed
    // test, killing whatever still runs a sandbox script. Passing tests leave nothing to kill.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const pid of processesMentioning(dir)) Either.try(() => process.kill(pid, "SIGKILL"))
      })
    )
    const claws = path.join(dir, "claws")
    fs.mkdirSync(claws)
    const file = (name: string) => path.join(dir, name)
    return {
      dir,
      runDir: file("run"),
      memory: file("memory"),
      claws,
      env: Cli.baseEnv({
        PLANCKCLAW_DIR: file("memory"),
        PLANCKCLAW_RUN_DIR: file("run"),
        CLAWS_DIR: claws,
        PLANCKCLAW_BRAIN_RETRIES: "0",
        ...settings
      }),
      path: file,
      read: (name) => (fs.existsSync(file(name)) ? fs.readFileSync(file(name), "utf8") : undefined),
      script: (name, body) => {
        const target = file(name)
        fs.mkdirSync(path.dirname(target), { recursive: true })
        fs.writeFileSync(target, `#!/bin/sh\nD='${dir}'\n${body}`, { mode: 0o755 })
        return target
      }
    }
  })

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
export const listening = (runDir: string) =>
  eventually(`an agent reading ${runDir}/interact_in`, () => {
    const fd = fs.openSync(path.join(runDir, "interact_in"), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)
    fs.closeSync(fd)
    return true
  })

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
        (child) => Effect.sync(() => void Either.try(() => process.kill(-(child.pid ?? 0), "SIGKILL")))
      )
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => void (stdout += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
      return yield* Effect.async<ShellResult>((resume) => {
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
