/**
 * What every real-process suite needs: temp directories, a sandbox per test
 * (working, memory, runtime and claws directories in one temp dir, with a
 * clean environment naming them), bounded waits, and probes of processes.
 *
 * Every wait is bounded: a test that would hang fails with a `WaitTimedOut`
 * naming what never happened. Nothing is asserted about how long anything
 * took.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Clock, Data, Duration, Effect, Result, Schedule, type Scope } from "effect"
import { TestClock } from "effect/testing"
import * as Cli from "./Cli.js"

// ---------------------------------------------------------------------------
// Bounded waits

/** Something a test waited for did not happen within its bound. */
export class WaitTimedOut extends Data.TaggedError("WaitTimedOut")<{ readonly message: string }> {}

/** Generous: a loaded two-core machine takes seconds to start Node. Never an assertion on speed. */
export const defaultBound = Duration.seconds(20)

/** Bounds a wait; past `bound` the test fails naming `what`. */
export const within = (what: string, bound: Duration.Input = defaultBound) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | WaitTimedOut, R> =>
  Effect.timeoutOrElse(effect, {
    duration: bound,
    orElse: () => Effect.fail(new WaitTimedOut({ message: `waited ${Duration.format(Duration.fromInputUnsafe(bound))} for ${what}` }))
  })

class NotYet extends Data.TaggedError("NotYet") {}

/** Polls `probe` (a throw counts as "not yet") until it returns a value other than undefined. */
export const eventually = <A>(
  what: string,
  probe: () => A | undefined,
  bound: Duration.Input = defaultBound
): Effect.Effect<A, WaitTimedOut> =>
  Effect.suspend(() => {
    const value = Result.getOrUndefined(Result.try(probe))
    return value === undefined ? Effect.fail(new NotYet()) : Effect.succeed(value)
  }).pipe(
    // Retries until `within` gives up, so NotYet never escapes.
    Effect.retry(Schedule.spaced("25 millis")),
    Effect.catchTag("NotYet", () => Effect.never),
    within(what, bound)
  )

// ---------------------------------------------------------------------------
// Processes

const readProc = (pid: number, file: string): string | undefined =>
  Result.getOrUndefined(Result.try(() => fs.readFileSync(`/proc/${pid}/${file}`, "utf8")))

/** State and parent from /proc/PID/stat; the state follows the parenthesised command name, which may hold spaces. */
const statOf = (pid: number): { readonly state: string | undefined; readonly ppid: string | undefined } => {
  const stat = readProc(pid, "stat") ?? ""
  const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return { state: state === "" ? undefined : state, ppid }
}

export const procState = (pid: number): string | undefined => statOf(pid).state

/** `process.kill(pid, 0)` says ESRCH: not even a zombie is left. */
export const isGone = (pid: number): boolean => {
  const probe = Result.try(() => process.kill(pid, 0))
  return Result.isFailure(probe) && (probe.failure as NodeJS.ErrnoException).code === "ESRCH"
}

/**
 * Alive: not gone and not a zombie (`Z`) or dying (`X`). A zombie only
 * waits for its parent (init, for an orphan) to collect its status.
 */
export const isRunning = (pid: number): boolean => {
  if (isGone(pid)) return false
  const state = procState(pid)
  return state !== "Z" && state !== "X"
}

/** `process.kill(-pgid, 0)` says ESRCH: no process of the group is left. */
export const groupGone = (pgid: number): boolean => {
  const probe = Result.try(() => process.kill(-pgid, 0))
  return Result.isFailure(probe) && (probe.failure as NodeJS.ErrnoException).code === "ESRCH"
}

/**
 * Polls `check` every `every` in real time (also under the TestClock), for
 * 15 s at most; its last answer, for the test to assert. For waits on a child
 * writing a file or on the OS reaping a process group.
 */
export const settles = (check: () => boolean, every: Duration.Input): Effect.Effect<boolean> =>
  Effect.sync(check).pipe(
    Effect.repeat({ until: (ok) => ok, schedule: Schedule.spaced(every).pipe(Schedule.upTo({ duration: "15 seconds" })) }),
    Effect.andThen(Effect.sync(check)),
    onLiveClock
  )

/**
 * `effect` on the real clock: the TestClock's live one under a TestClock, as
 * it is otherwise (`it.live`, or already inside `onLiveClock`), where
 * `TestClock.withLive` would fail for want of a TestClock.
 */
export const onLiveClock = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.service(Clock.Clock), (clock) =>
    "withLive" in clock ? (clock as TestClock.TestClock).withLive(effect) : effect)

/** Describes a process for an assertion message: pid, state, parent, command line. */
export const describeProcess = (pid: number): string => {
  const { ppid, state } = statOf(pid)
  const command = readProc(pid, "cmdline")?.replace(/\0/g, " ") ?? "?"
  return `pid ${pid} state ${state ?? "?"} ppid ${ppid ?? "?"}: ${command}`
}

/** Waits until `pid` is no longer running (gone, or only a zombie left). */
export const exited = (what: string, pid: number, bound: Duration.Input = defaultBound) =>
  eventually(`${what} (pid ${pid}) to exit`, () => (isRunning(pid) ? undefined : true), bound)

/**
 * Waits until `pid` is gone for good (ESRCH). A zombie counts as still
 * there: PID 1 here reaps orphans only every couple of seconds, hence the
 * polling.
 */
export const gone = (what: string, pid: number, bound: Duration.Input = defaultBound) =>
  eventually(`${what} (pid ${pid}) to be gone (ESRCH)`, () => (isGone(pid) ? true : undefined), bound).pipe(
    Effect.mapError((error) => new WaitTimedOut({ message: `${error.message}; it is still there: ${describeProcess(pid)}` }))
  )

/** The pid a script wrote into `file`, once it has. */
export const pidIn = (file: string, bound: Duration.Input = defaultBound) =>
  eventually(`a pid in ${path.basename(file)}`, () => {
    const pid = Number.parseInt(fs.readFileSync(file, "utf8"), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  }, bound)

/**
 * Live (non-zombie) processes whose command line or environment mentions
 * `marker` (a sandbox path): the commands and scripts a test started, and
 * whatever those started in turn (they inherit PLANCKCLAW_RUN_DIR).
 */
export const processesMentioning = (marker: string): Array<number> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    const pid = Number(entry)
    if (!Number.isSafeInteger(pid) || pid === process.pid || procState(pid) === "Z") return []
    const mentions = (file: string) => readProc(pid, file)?.includes(marker) === true
    return mentions("cmdline") || mentions("environ") ? [pid] : []
  })

/** Live children of `parent` whose command line contains `marker`. */
export const childrenOf = (parent: number, marker: string): Array<number> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    const pid = Number(entry)
    if (!Number.isSafeInteger(pid)) return []
    const { ppid, state } = statOf(pid)
    if (state === undefined || state === "Z" || Number(ppid) !== parent) return []
    return readProc(pid, "cmdline")?.includes(marker) === true ? [pid] : []
  })

// ---------------------------------------------------------------------------
// Directories

/** A fresh directory under the system temp dir, removed with everything in it when the scope closes. */
export const tempDir = (prefix = "planckclaw-test-"): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

/** The `#TOOLS:` line a claw prints to declare one tool without parameters. */
export const tool = (name: string, description = `${name} tool`) =>
  `#TOOLS:${JSON.stringify({ name, description, input_schema: { type: "object", properties: {} } })}`

export interface Sandbox {
  /** The working directory of every command (where config.env would be read); a real path. */
  readonly dir: string
  /** PLANCKCLAW_DIR (not created: the agent creates it). */
  readonly memory: string
  /** PLANCKCLAW_RUN_DIR (not created: `planckclaw run` lays it out). */
  readonly runDir: string
  /** CLAWS_DIR: empty unless a test adds claws, so the agent has no tools by default. */
  readonly claws: string
  /** A clean environment naming the directories above, plus the sandbox's settings. */
  readonly env: NodeJS.ProcessEnv
  /** `env` plus `extra`. */
  readonly envWith: (extra?: Record<string, string>) => NodeJS.ProcessEnv
  readonly path: (name: string) => string
  /** Contents of a sandbox file, `undefined` when absent. */
  readonly read: (name: string) => string | undefined
  /** A memory file, `undefined` when absent. */
  readonly memoryFile: (name: string) => string | undefined
  /** Writes a memory file (creating the memory directory). */
  readonly writeMemory: (name: string, content: string | Buffer) => void
  /** Writes an executable claw `CLAWS_DIR/name`: `#!/bin/sh`, `D=<sandbox>`, then `body`. */
  readonly claw: (name: string, body: string) => string
  /** Writes an executable script anywhere in the sandbox, same preamble; its path. */
  readonly script: (name: string, body: string) => string
}

/**
 * A sandbox whose environment holds the four directories,
 * PLANCKCLAW_BRAIN_RETRIES=0 and `settings`. When the scope closes, whatever
 * still runs for it is killed (a safety net for a failed test: passing tests
 * leave nothing), then the directory goes.
 */
export const sandbox = (
  settings: Record<string, string> = {},
  prefix = "planckclaw-sandbox-"
): Effect.Effect<Sandbox, never, Scope.Scope> =>
  Effect.gen(function*() {
    const dir = fs.realpathSync(yield* tempDir(prefix))
    // Finalizers run in reverse, so this runs before the temp dir goes.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const pid of processesMentioning(dir)) Result.try(() => process.kill(pid, "SIGKILL"))
      })
    )
    const file = (name: string) => path.join(dir, name)
    const memory = file("memory")
    const claws = file("claws")
    fs.mkdirSync(claws)
    const env = Cli.baseEnv({
      PLANCKCLAW_DIR: memory,
      PLANCKCLAW_RUN_DIR: file("run"),
      CLAWS_DIR: claws,
      PLANCKCLAW_BRAIN_RETRIES: "0",
      ...settings
    })
    const writeScript = (target: string, body: string) => {
      fs.mkdirSync(path.dirname(target), { recursive: true })
      fs.writeFileSync(target, `#!/bin/sh\nD='${dir}'\n${body}`, { mode: 0o755 })
      return target
    }
    const readIfThere = (target: string) => (fs.existsSync(target) ? fs.readFileSync(target, "utf8") : undefined)
    return {
      dir,
      memory,
      runDir: file("run"),
      claws,
      env,
      envWith: (extra = {}) => ({ ...env, ...extra }),
      path: file,
      read: (name) => readIfThere(file(name)),
      memoryFile: (name) => readIfThere(path.join(memory, name)),
      writeMemory: (name, content) => {
        fs.mkdirSync(memory, { recursive: true, mode: 0o700 })
        fs.writeFileSync(path.join(memory, name), content)
      },
      claw: (name, body) => writeScript(path.join(claws, name), body),
      script: (name, body) => writeScript(file(name), body)
    }
  })
