/**
 * Runs one short-lived child process in a session of its own and collects
 * its output under a byte cap.
 *
 * The child is spawned detached (setsid), so its pid is also its session
 * and process group id, and everything it forks can be killed at once: the
 * group, and any group made within the session (GNU `timeout` makes one).
 * The session gets SIGKILL when the main process exits (so a forgotten
 * `sleep 1000 &` that still holds stdout cannot keep the call waiting),
 * when it floods stdout or stderr, and when the run is interrupted (a
 * caller's timeout, agent shutdown): the release waits until Node has reaped the
 * main process, so no zombie is left behind by us. Grandchildren are
 * reparented to init, which reaps them. Once the main process has exited
 * and its session is killed, whatever still holds its stdout or stderr is
 * outside it (a daemon started with setsid): the run waits `outputGrace`
 * for end of file, then answers with what was read, and logs a warning. While it runs, the group is listed
 * with the watchdog in context (Watchdog), which kills its session should
 * the agent die without closing its scopes (SIGKILL).
 *
 * The request and outcome are in ChildRun, the spawned child's wiring in
 * RunningChild, the private working directories in PrivateDirectory.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type { RunOutcome, RunRequest, SpawnError } from "./ChildRun.js"
import { privateDirectory } from "./PrivateDirectory.js"
import * as RunningChild from "./RunningChild.js"
import { Watchdog } from "./Watchdog.js"

export { type Flooded, type RunOutcome, type RunRequest, SpawnError, type WorkingDirectory } from "./ChildRun.js"
export { privateDirectory } from "./PrivateDirectory.js"
export { outputGrace } from "./RunningChild.js"

/**
 * Runs the request to completion. Interrupting the returned effect kills the
 * whole process group; apply a timeout with `Effect.timeout*` on the result.
 */
export const run = (request: RunRequest): Effect.Effect<RunOutcome, SpawnError, Watchdog> =>
  typeof request.cwd === "string"
    ? runIn(request, request.cwd)
    // The directory outlives the process group: `runIn` returns (or is
    // interrupted) only once the group is killed and reaped.
    : Effect.scoped(Effect.flatMap(privateDirectory(request.cwd.privateIn, request.cwd.prefix), (cwd) => runIn(request, cwd)))

const runIn = (request: RunRequest, cwd: string): Effect.Effect<RunOutcome, SpawnError, Watchdog> =>
  Effect.gen(function*() {
    const watchdog = yield* Watchdog
    const ends: RunningChild.Ends = { done: yield* Deferred.make<RunOutcome, SpawnError>(), exit: yield* Deferred.make<void>() }
    const started = Effect.suspend(() => Effect.fromResult(RunningChild.start(watchdog, request, cwd, ends)))
    return yield* Effect.acquireRelease(started, RunningChild.stop).pipe(
      Effect.flatMap((running) => Effect.raceFirst(Deferred.await(ends.done), RunningChild.heldOpen(request, running, ends))),
      Effect.scoped
    )
  })
