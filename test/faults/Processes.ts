/**
 * The built `bin/planckclaw` as a child process in a fault sandbox, and
 * what it may leave behind: its watchdog, and processes that outlived it.
 * Unlike Pipes' command (stdout lines on demand), this one can start under
 * a umask, with stdin ignored, and waits on stdout and stderr as they grow.
 */
import * as child from "node:child_process"
import { Duration, Effect, type Scope } from "effect"
import * as Cli from "../support/Cli.js"
import { childrenOf, describeProcess, processesMentioning, type Sandbox } from "../support/Sandbox.js"
import { eventually, WaitTimedOut, within } from "./Bounds.js"

/** The watchdog planckclaw `pid` started (a `/bin/sh -c` reading the groups it must kill). */
export const watchdogOf = (pid: number) =>
  eventually(`planckclaw ${pid}'s watchdog`, () => childrenOf(pid, "groups=")[0])

/** The spawn helper planckclaw `pid` started for its claws (src/runtime/process/SpawnHelper.ts), and the helper's watchdog. */
export const spawnHelperOf = (pid: number) =>
  Effect.gen(function*() {
    const helper = yield* eventually(`planckclaw ${pid}'s spawn helper`, () => childrenOf(pid, "spawn-helper.cjs")[0])
    return { helper, watchdog: yield* watchdogOf(helper) }
  })

/**
 * Waits (briefly, polling) until no process started for this sandbox is
 * left, and returns whatever still is: `[]` means no orphan.
 */
export const strays = (box: Sandbox, bound: Duration.Input = Duration.seconds(10)) =>
  eventually("the sandbox's processes to be gone", () => processesMentioning(box.dir).length === 0 ? true : undefined, bound)
    .pipe(
      Effect.as<Array<string>>([]),
      Effect.catchTag("WaitTimedOut", () => Effect.sync(() => processesMentioning(box.dir).map(describeProcess)))
    )

export interface Planckclaw {
  readonly pid: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Whole stdout lines so far. */
  readonly lines: () => Array<string>
  /** Waits for `count` whole stdout lines. */
  readonly awaitLines: (count: number) => Effect.Effect<Array<string>, WaitTimedOut>
  /** Waits until stderr matches. */
  readonly awaitStderr: (pattern: RegExp) => Effect.Effect<string, WaitTimedOut>
  readonly write: (text: string) => Effect.Effect<void>
  readonly closeInput: Effect.Effect<void>
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** How it ended (code or signal), waiting at most the bound. */
  readonly ended: Effect.Effect<{ readonly code: number | null; readonly signal: string | null }, WaitTimedOut>
}

/**
 * Starts `planckclaw ARGS` in the sandbox. On scope close a command still
 * running gets SIGTERM, then SIGKILL if it does not stop in time.
 */
export const planckclaw = (
  box: Sandbox,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv,
  options: { readonly stdin?: "pipe" | "ignore"; readonly umask?: string } = {}
): Effect.Effect<Planckclaw, never, Scope.Scope> =>
  Effect.gen(function*() {
    const stdio: child.StdioOptions = [options.stdin ?? "pipe", "pipe", "pipe"]
    // With a umask, through `sh -c 'umask …; exec node …'`: the pid is still planckclaw's.
    const proc = options.umask === undefined
      ? child.spawn(process.execPath, [Cli.BIN, ...args], { cwd: box.dir, env, stdio })
      : child.spawn("/bin/sh", ["-c", `umask ${options.umask}; exec "$0" "$@"`, process.execPath, Cli.BIN, ...args], {
        cwd: box.dir,
        env,
        stdio
      })
    let stdout = ""
    let stderr = ""
    const wakers = new Set<() => void>()
    const wake = () => {
      for (const waker of [...wakers]) waker()
    }
    proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      wake()
    })
    proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
      wake()
    })
    // Ended means exited and its output read; but a survivor that inherited
    // its stdout (a bridge left behind) would hold the pipes open forever:
    // then ended is two seconds after the exit, and `strays` names the survivor.
    const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      proc.on("close", (code, signal) => {
        wake()
        resolve({ code, signal })
      })
      proc.on("exit", (code, signal) => {
        setTimeout(() => resolve({ code, signal }), 2000).unref()
      })
    })
    const awaitCondition = <A>(what: string, check: () => A | undefined) =>
      Effect.callback<A>((resume) => {
        const waker = () => {
          const value = check()
          if (value !== undefined) {
            wakers.delete(waker)
            resume(Effect.succeed(value))
          }
        }
        wakers.add(waker)
        waker()
        return Effect.sync(() => void wakers.delete(waker))
      }).pipe(within(what))
    const running = () => proc.exitCode === null && proc.signalCode === null
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (!running()) return
        proc.kill("SIGTERM")
        const stopped = yield* Effect.promise(() => exit).pipe(within("a graceful stop", "15 seconds"), Effect.option)
        if (stopped._tag === "None") {
          proc.kill("SIGKILL")
          yield* Effect.promise(() => exit)
        }
      })
    )
    const lines = () => stdout.split("\n").slice(0, -1)
    return {
      pid: proc.pid ?? -1,
      stdout: () => stdout,
      stderr: () => stderr,
      lines,
      awaitLines: (count) =>
        awaitCondition(`${count} line(s) on planckclaw's stdout (so far: ${JSON.stringify(stdout.slice(-300))})`, () =>
          lines().length >= count ? lines() : undefined),
      awaitStderr: (pattern) =>
        awaitCondition(`stderr to match ${pattern}`, () => (pattern.test(stderr) ? stderr : undefined)),
      write: (input) => Effect.callback<void>((resume) => void proc.stdin!.write(input, () => resume(Effect.void))),
      closeInput: Effect.sync(() => void proc.stdin!.end()),
      signal: (signal) => Effect.sync(() => void proc.kill(signal)),
      ended: Effect.promise(() => exit).pipe(within(`planckclaw ${args.join(" ")} to exit`))
    }
  })

/** Runs `planckclaw ARGS` with `input` on stdin to its end: code, stdout, stderr. */
export const planckclawToEnd = (box: Sandbox, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, input = "") =>
  Effect.scoped(Effect.gen(function*() {
    const proc = yield* planckclaw(box, args, env)
    yield* proc.write(input)
    yield* proc.closeInput
    const { code, signal } = yield* proc.ended
    return { code, signal, stdout: proc.stdout(), stderr: proc.stderr() }
  }))

/** A wait that ran out says what planckclaw logged meanwhile. */
export const diagnosed = (proc: Planckclaw) => <A, R>(effect: Effect.Effect<A, WaitTimedOut, R>) =>
  Effect.mapError(effect, (error) =>
    new WaitTimedOut({ message: `${error.message}\n--- planckclaw stderr (tail) ---\n${proc.stderr().slice(-4000)}` }))
