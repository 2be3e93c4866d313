/**
 * Process groups this process started (claws, external bridges) run in
 * sessions of their own, so a dying planckclaw takes none of them along. A
 * clean stop closes their scopes and kills them; a SIGKILL, the OOM killer or
 * a crash closes nothing. This module is the net for that case.
 *
 * It starts one tiny `/bin/sh` per process, in its own session (so Ctrl-C in
 * the terminal does not reach it) and with an environment of nothing but
 * PATH (so it holds no secret). It reads `+PGID` and `-PGID` lines on its
 * stdin, a pipe that only this process holds the write end of. When this
 * process ends, however it ends, the kernel closes that pipe: the watchdog
 * reads end of file, sends SIGTERM to every group still listed and to every
 * process of its session, then SIGKILL after a grace period, and exits. A
 * process that ends cleanly has listed nothing by then, and the watchdog
 * just exits.
 *
 * A group is listed before it runs anything of its own: it starts as a gate
 * (`/bin/sh`, the one exec this costs) that waits on a socket until the
 * watchdog has been handed its id, then execs the command in place (same
 * pid, same group). Should this process die in between, the gate reads end
 * of file and the command never starts. A watchdog that cannot be started
 * fails the spawn; one killed by a signal is replaced and told every group.
 *
 * A scoped service (`layer`): the command provides it at its entry, so one
 * watchdog stands for the process, started at the first guarded spawn; the
 * scope's end (the end of the run) closes its stdin as the process's death
 * would, and it exits (signalling what is still listed, which after a clean
 * stop is nothing).
 */
import { type ChildProcess, spawn, type StdioNull, type StdioPipe } from "node:child_process"
import * as fs from "node:fs"
import type { Writable } from "node:stream"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { describeError } from "../Errors.js"

/** Seconds between SIGTERM and SIGKILL for groups left behind. */
export const graceSeconds = 2

// The groups already listed come as arguments: a replacement knows them from
// its exec on (a line written after it starts could come too late).
// `kill -SIG -PGID` (no `--`): dash's builtin does not take one. A group
// listed twice (a replay racing a write) is kept once, so one `-` forgets it.
// Each group leads a session (setsid): `sweep` also signals every other
// process of it (field 6 of /proc/PID/stat, counted after the command name's
// last `) `), which a group of its own (GNU timeout) would otherwise hide.
const script = `groups=" "
for g do groups="$groups$g "; done
while IFS= read -r line; do
  case $line in
    +*) g=\${line#+}
        case $groups in *" $g "*) ;; *) groups="$groups$g " ;; esac ;;
    -*) g=\${line#-}
        case $groups in *" $g "*) groups="\${groups%% $g *} \${groups#* $g }" ;; esac ;;
  esac
done
[ "$groups" = " " ] && exit 0
sweep() {
  sig=$1
  for g in $groups; do kill -$sig "-$g" 2>/dev/null; done
  for f in /proc/[0-9]*/stat; do
    { IFS= read -r stat <"$f"; } 2>/dev/null || continue
    set -- \${stat##*) }
    case $groups in *" $4 "*) p=\${f#/proc/}; kill -$sig "\${p%/stat}" 2>/dev/null ;; esac
  done
}
sweep TERM
sleep ${graceSeconds}
sweep KILL
exit 0
`

/**
 * Waits for one line on fd 3: empty means listed, go; anything else is why
 * not (printed, exit 1). End of file (this process died first) starts nothing.
 * dash exports PWD to what it execs: dropped unless the caller passed one.
 */
const gate = (keepPwd: boolean) =>
  `${keepPwd ? "" : "unset PWD; "}IFS= read -r refusal <&3 || exit 1; ` +
  `[ -z "$refusal" ] || { printf 'planckclaw: %s\\n' "$refusal" >&2; exit 1; }; exec 3<&- "$@"`

export class GuardedSpawnFailed extends Data.TaggedError("GuardedSpawnFailed")<{
  readonly message: string
  /** The system error of a failed spawn (its `code` says which), or why no watchdog runs. */
  readonly cause: unknown
}> {}

export interface GuardedOptions {
  readonly cwd?: string
  readonly env: Readonly<Record<string, string | undefined>>
  // A number: one of our descriptors (an executable bridge's stdout may be our stderr, 2).
  readonly stdio: readonly [StdioNull | StdioPipe, StdioNull | StdioPipe | number, StdioNull | StdioPipe]
}


export interface WatchdogService {
  /**
   * Spawns `command` in a process group of its own (its pid is the group
   * id), listed with the watchdog before the command starts: no instant
   * exists in which a kill of this process leaves it running. Fails when
   * the command cannot be executed, or when no watchdog can be started
   * (rather than run a group nothing would kill).
   */
  readonly spawnGuarded: (
    command: string,
    args: ReadonlyArray<string>,
    options: GuardedOptions
  ) => Result.Result<ChildProcess, GuardedSpawnFailed>
  /** The group is gone (or killed): the watchdog must not signal it later, its id may be reused. */
  readonly untrackGroup: (pgid: number) => void
}

export class Watchdog extends Context.Service<Watchdog, WatchdogService>()("planckclaw/Watchdog") {}

const isUsable = (child: ChildProcess | undefined): child is ChildProcess =>
  child !== undefined && child.exitCode === null && child.signalCode === null &&
  child.stdin?.writable === true

/** The watchdog of a scope: started at its first guarded spawn, its stdin closed (its end of file) when the scope ends. */
export const make: Effect.Effect<WatchdogService, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(Effect.sync(makeWatchdog), (watchdog) => Effect.sync(watchdog.end)),
  ({ spawnGuarded, untrackGroup }) => ({ spawnGuarded, untrackGroup })
)

/** One watchdog for the scope the layer is built in (a command provides it at its entry). */
export const layer: Layer.Layer<Watchdog> = Layer.effect(Watchdog, make)

/** `untrackGroup` of the watchdog in context. */
export const untrack = (pgid: number): Effect.Effect<void, never, Watchdog> =>
  Effect.map(Watchdog, (watchdog) => watchdog.untrackGroup(pgid))

function makeWatchdog(): WatchdogService & { readonly end: () => void } {
  const tracked = new Set<number>()
  let watchdog: ChildProcess | undefined
  let ended = false

  /** The running watchdog, started (and told every tracked group) if there is none. */
  const current = (): Result.Result<ChildProcess, unknown> => {
    if (isUsable(watchdog)) return Result.succeed(watchdog)
    if (ended) return Result.fail("its scope has ended (planckclaw is stopping)")
    const started = Result.try(() =>
      spawn("/bin/sh", ["-c", script, "planckclaw-watchdog", ...[...tracked].map(String)], {
        detached: true,
        stdio: ["pipe", "ignore", "ignore"],
        env: { PATH: "/usr/bin:/bin" }
      })
    )
    if (Result.isFailure(started)) return started
    const child = started.success
    // A failed spawn (EAGAIN, ENOENT) reports through 'error' and has no pid.
    child.on("error", () => undefined)
    child.stdin?.on("error", () => undefined)
    // It must never keep this process alive: it exists for when this process is gone.
    child.unref()
    ;(child.stdin as { unref?: () => void } | null)?.unref?.()
    if (child.pid === undefined) {
      child.stdin?.destroy()
      return Result.fail("/bin/sh could not be spawned")
    }
    watchdog = child
    // Killed by someone while groups run: a new one takes over the list at once.
    child.once("exit", (_code, signal) => {
      if (watchdog !== child) return
      watchdog = undefined
      if (signal !== null && tracked.size > 0) current()
    })
    return Result.succeed(child)
  }

  /**
   * Hands the group to the watchdog, then `then(true)` once the line is with
   * the kernel (a SIGKILL from then on still reaches the watchdog), or
   * `then(false)` when no watchdog can take it.
   */
  const list = (pgid: number, then: (listed: boolean) => void, retried = false): void => {
    const running = current()
    if (Result.isFailure(running)) return then(false)
    tracked.add(pgid)
    running.success.stdin?.write(`+${pgid}\n`, (error) => {
      if (error === undefined || error === null) return then(true)
      // That watchdog died before taking it; the next one is told every tracked group, this one too.
      if (retried) {
        tracked.delete(pgid)
        return then(false)
      }
      list(pgid, then, true)
    })
  }

  const spawnGuarded: WatchdogService["spawnGuarded"] = (command, args, options) => {
    // The gate execs the command: checked here so a missing one still fails the spawn with its errno.
    if (command.includes("/")) {
      const access = Result.try(() => fs.accessSync(command, fs.constants.X_OK))
      if (Result.isFailure(access)) return Result.fail(new GuardedSpawnFailed({ message: describeError(access.failure), cause: access.failure }))
    }
    const running = current()
    if (Result.isFailure(running)) {
      return Result.fail(
        new GuardedSpawnFailed({
          message: `no watchdog could be started to stop it should planckclaw be killed (${describeError(running.failure)})`,
          cause: running.failure
        })
      )
    }
    const spawned = Result.try({
      try: () =>
        spawn("/bin/sh", ["-c", gate("PWD" in options.env), "planckclaw-gate", command, ...args], {
          cwd: options.cwd,
          env: options.env,
          stdio: [...options.stdio, "pipe"],
          detached: true
        }),
      catch: (cause) => new GuardedSpawnFailed({ message: describeError(cause), cause })
    })
    if (Result.isFailure(spawned)) return spawned
    const child = spawned.success
    const gateSocket = child.stdio[3] as Writable | null
    gateSocket?.on("error", () => undefined)
    const answer = (line: string) => gateSocket?.write(`${line}\n`, () => gateSocket.destroy())
    if (child.pid === undefined) {
      // Nothing started; the child's 'error' event says why.
      gateSocket?.destroy()
      return spawned
    }
    const pgid = child.pid
    list(pgid, (listed) => answer(listed ? "" : "not started: no watchdog could take its process group"))
    return spawned
  }

  const untrackGroup = (pgid: number): void => {
    if (!tracked.delete(pgid)) return
    if (isUsable(watchdog)) watchdog.stdin?.write(`-${pgid}\n`)
  }

  /** The scope's end: end of file for the watchdog, as this process's death would be. */
  const end = (): void => {
    ended = true
    watchdog?.stdin?.end()
  }

  return { spawnGuarded, untrackGroup, end }
}
