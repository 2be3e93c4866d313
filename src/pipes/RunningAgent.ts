/**
 * A bridge process (`planckclaw bridge NAME`) joins the runtime directory of
 * a live run instead of laying one out, and stops when that run ends: the
 * pipes stay open on its side, so the run's end shows no end-of-file, and
 * the run's pid is watched instead.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type * as ConfigError from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { readPidFileSync } from "../runtime/process/PidFile.js"
import { isAlive } from "../runtime/process/PidLiveness.js"
import { fifoPathsConfig, pidFileName } from "./FifoPaths.js"
import { RunPaths } from "./RuntimeDir.js"

/** No live run to join, or the run joined has ended. */
export class NoRunningAgent extends Data.TaggedError("NoRunningAgent")<{
  readonly reason: "no-runtime-dir" | "not-live" | "ended"
  readonly message: string
  /** The run that ended. */
  readonly pid?: number
}> {}

export interface RunningAgentService {
  readonly pid: number
  /** Fails with `ended` once the run is gone (or its pid file names another process). */
  readonly ended: Effect.Effect<never, NoRunningAgent>
}

export class RunningAgent extends Context.Service<RunningAgent, RunningAgentService>()("planckclaw/RunningAgent") {}

const join = Effect.gen(function*() {
  const paths = yield* fifoPathsConfig
  const missing = [paths.interactIn, paths.brainIn, paths.clawIn].filter((fifo) => !fs.existsSync(fifo))
  if (missing.length > 0) {
    return yield* new NoRunningAgent({
      reason: "no-runtime-dir",
      message: `no runtime directory at ${paths.runDir} (missing ${missing.map((m) => path.basename(m)).join(", ")}): ` +
        "start `planckclaw run --bridge none` (or with the bridges you keep) first"
    })
  }
  const pidFile = path.join(paths.runDir, pidFileName)
  const owner = readPidFileSync(pidFile)
  if (owner === undefined || !isAlive(owner)) {
    return yield* new NoRunningAgent({
      reason: "not-live",
      message: `no live planckclaw run owns ${paths.runDir}: start \`planckclaw run\` first`
    })
  }
  const ended = Effect.sync(() => readPidFileSync(pidFile) === owner && isAlive(owner)).pipe(
    Effect.repeat({ schedule: Schedule.spaced("1 second"), while: (running) => running }),
    Effect.andThen(
      new NoRunningAgent({
        reason: "ended",
        pid: owner,
        message: `the run this bridge served (pid ${owner}) has ended; start the bridge again for the next run`
      })
    )
  )
  return { paths, agent: { pid: owner, ended } satisfies RunningAgentService }
})

/** The pipes of the live run at PLANCKCLAW_RUN_DIR (or the per-pipe variables), and that run. */
export const layer: Layer.Layer<RunPaths | RunningAgent, NoRunningAgent | ConfigError.ConfigError> = Layer.effectContext(
  Effect.map(join, ({ agent, paths }) => Context.make(RunPaths, paths).pipe(Context.add(RunningAgent, agent)))
)
