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
 * reads end of file, sends SIGTERM to every group still listed, then SIGKILL
 * after a grace period, and exits. A process that ends cleanly has listed
 * nothing by then, and the watchdog just exits.
 *
 * Module state on purpose: it stands for this process's death, of which
 * there is one. Everything here is best effort and never fails the caller:
 * without a watchdog, a clean stop still kills every group.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"

/** Seconds between SIGTERM and SIGKILL for groups left behind. */
export const graceSeconds = 2

// `kill -SIG -PGID` (no `--`): dash's builtin does not take one.
const script = `groups=" "
while IFS= read -r line; do
  case $line in
    +*) groups="$groups\${line#+} " ;;
    -*) g=\${line#-}
        case $groups in *" $g "*) groups="\${groups%% $g *} \${groups#* $g }" ;; esac ;;
  esac
done
[ "$groups" = " " ] && exit 0
for g in $groups; do kill -TERM "-$g" 2>/dev/null; done
sleep ${graceSeconds}
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
exit 0
`

const tracked = new Set<number>()
let watchdog: ChildProcess | undefined

const isUsable = (child: ChildProcess | undefined): child is ChildProcess =>
  child !== undefined && child.exitCode === null && child.signalCode === null && child.stdin?.writable === true

/** The running watchdog, started (and told every tracked group) if there is none. */
const current = (): ChildProcess | undefined => {
  if (isUsable(watchdog)) return watchdog
  const started = Either.try(() =>
    spawn("/bin/sh", ["-c", script], {
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
      env: { PATH: "/usr/bin:/bin" }
    })
  )
  if (Either.isLeft(started)) return undefined
  const child = started.right
  // A watchdog that died makes writes fail; the next call starts another.
  child.on("error", () => undefined)
  child.stdin?.on("error", () => undefined)
  // It must never keep this process alive: it exists for when this process is gone.
  child.unref()
  ;(child.stdin as { unref?: () => void } | null)?.unref?.()
  watchdog = child
  for (const pgid of tracked) child.stdin?.write(`+${pgid}\n`)
  return child
}

/** Lists a group with the watchdog (starting one if none runs). */
const trackGroup = (pgid: number): void => {
  if (!Number.isSafeInteger(pgid) || pgid <= 1 || tracked.has(pgid)) return
  const running = isUsable(watchdog)
  tracked.add(pgid)
  // A watchdog started now is told every tracked group, this one included.
  const child = current()
  if (running) child?.stdin?.write(`+${pgid}\n`)
}

/**
 * Spawns a process group and lists it, with no gap a kill could fall into:
 * the watchdog is started first (that takes milliseconds), so the group is
 * listed in the same instant it is created. `spawn` must start a detached
 * child (its pid is its group id).
 */
export const spawnGuarded = <Child extends { readonly pid?: number | undefined }>(start: () => Child): Child => {
  current()
  const child = start()
  if (child.pid !== undefined) trackGroup(child.pid)
  return child
}

/** The group is gone (or killed): the watchdog must not signal it later, its id may be reused. */
export const untrackGroup = (pgid: number): void => {
  if (!tracked.delete(pgid)) return
  if (isUsable(watchdog)) watchdog.stdin?.write(`-${pgid}\n`)
}

export const untrack = (pgid: number): Effect.Effect<void> => Effect.sync(() => untrackGroup(pgid))
