/**
 * One bridge per role. Two processes reading one pipe race for its lines (a
 * second `planckclaw bridge cli` beside a run's own terminal would take
 * replies meant for it, and the session would then wait for them), so
 * whoever serves a pair of pipes claims its role first, in a file of the
 * runtime directory holding its pid (`interact-bridge.pid`, `brain-bridge.pid`,
 * `claw-bridge.pid`): a run for the bridges it serves itself (built in or
 * executables it starts), a `planckclaw bridge NAME` process for its own.
 * A second claim is refused while the holder lives; a holder that is gone
 * (killed) is replaced, one claimant at a time (ClaimGuard). Released with
 * the scope. A process outside
 * planckclaw reading the pipes (`cat interact_out` beside `--bridge none`)
 * claims nothing: nothing can stop it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { readPidFileSync } from "../runtime/process/PidFile.js"
import { heldBy } from "../runtime/process/PidLiveness.js"
import * as ClaimGuard from "./ClaimGuard.js"
import { releaseIfOurs, writeOwnPid } from "./OwnPidFile.js"
import { attempt, ignoringMissing, lstatOption, refuse } from "./RuntimeDirChecks.js"
import type { RuntimeDirError } from "./RuntimeDirError.js"

export type Role = "interact" | "brain" | "claw"

export const roles: ReadonlyArray<Role> = ["interact", "brain", "claw"]

/** The flag of `run` that chooses who serves the role. */
const flagOf = { interact: "--bridge", brain: "--brain", claw: "--claw" } as const satisfies Record<Role, string>

export const claimFileName = (role: Role): string => `${role}-bridge.pid`

/** Who holds `role` in `runDir`, when a live process does (its pid). */
export const holder = (runDir: string, role: Role): number | undefined => {
  const file = path.join(runDir, claimFileName(role))
  const pid = readPidFileSync(file)
  return pid !== undefined && heldBy(pid, file) ? pid : undefined
}

const refusal = (runDir: string, role: Role, pid: number | undefined, runPid: number | undefined) =>
  refuse(
    "in-use",
    pid !== undefined && pid === runPid
      ? `the run (pid ${pid}) serves the ${role} pipes of ${runDir} itself, and one bridge per role may: ` +
        `start the run with ${flagOf[role]} none to serve them from a bridge process`
      : `the ${role} pipes of ${runDir} are served already by another bridge${pid === undefined ? "" : ` (pid ${pid})`}, ` +
        "and one bridge per role may: stop that one first",
    pid
  )

/**
 * Whether there is a claim to remove: one of a holder that is gone (or the
 * empty file of a start killed while writing it, or one holding no pid). A
 * live holder's is refused, and so is a file that is not ours to judge (a
 * link, a directory).
 */
const staleClaim = (runDir: string, role: Role, runPid: number | undefined): Effect.Effect<boolean, RuntimeDirError> =>
  Effect.gen(function*() {
    const file = path.join(runDir, claimFileName(role))
    const found = yield* lstatOption(file)
    if (found._tag === "None") return false
    if (!found.value.isFile()) {
      return yield* refuse("foreign-entry", `${file} is not a file planckclaw wrote: remove it or choose another PLANCKCLAW_RUN_DIR`)
    }
    const pid = holder(runDir, role)
    if (pid !== undefined) return yield* refusal(runDir, role, pid, runPid)
    return true
  })

/** Removes a stale claim (see staleClaim); to be run under its guard, where it is judged again. */
const clearStale = (runDir: string, role: Role, runPid: number | undefined): Effect.Effect<void, RuntimeDirError> =>
  Effect.flatMap(staleClaim(runDir, role, runPid), (stale) => {
    const file = path.join(runDir, claimFileName(role))
    return stale ? ignoringMissing(attempt(`cannot remove stale ${file}`, () => fs.unlinkSync(file))) : Effect.void
  })

/**
 * Waits, up to `bound`, until no live process holds a claim in `runDir`:
 * bridge processes notice their run's end within a second or so and then
 * release theirs, after which a directory the run made can go (see
 * RuntimeDir.makeRuntimeDir).
 */
export const othersReleased = (runDir: string, bound: Duration.Input = "3 seconds"): Effect.Effect<void> =>
  Effect.sync(() => roles.some((role) => holder(runDir, role) !== undefined)).pipe(
    Effect.repeat({ while: (held) => held, schedule: Schedule.spaced("50 millis") }),
    Effect.timeoutOption(bound),
    Effect.asVoid
  )

/**
 * Removes the claims in `runDir` of holders that are gone (a run lays its
 * directory out), leaving any other, and any a bridge is claiming right now.
 */
export const clearDead = (runDir: string): Effect.Effect<void> =>
  Effect.forEach(
    roles,
    (role) => Effect.ignore(ClaimGuard.guarded(path.join(runDir, claimFileName(role)), clearStale(runDir, role, undefined))),
    { discard: true }
  )

/**
 * Claims `role` in `runDir` for this process, for the scope. `runPid`: the
 * run whose pipes these are, so a refusal can say the run serves the role
 * itself. Refused (RuntimeDirError `in-use`) while a live process holds it.
 * A holder's claim is looked at first (a live one is refused at once), then
 * judged again, removed if stale and ours made under its guard (ClaimGuard):
 * of two claims racing over a dead holder's, one wins and the other is
 * refused naming it.
 */
export const claim = (runDir: string, role: Role, runPid: number | undefined): Effect.Effect<void, RuntimeDirError, Scope.Scope> =>
  Effect.gen(function*() {
    const file = path.join(runDir, claimFileName(role))
    yield* staleClaim(runDir, role, runPid)
    const made = yield* ClaimGuard.guardedPatiently(file, Effect.andThen(clearStale(runDir, role, runPid), writeOwnPid(file))).pipe(
      Effect.catchTag("ClaimBusy", (busy) => refusal(runDir, role, busy.takerPid, runPid))
    )
    if (!made) {
      // Made by a start that does not take the guard, between our look and our write: it holds it now.
      return yield* refusal(runDir, role, holder(runDir, role), runPid)
    }
    yield* Effect.addFinalizer(() => releaseIfOurs(file, Effect.sync(() => readPidFileSync(file))))
  })
