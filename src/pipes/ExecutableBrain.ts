/**
 * A brain that is an executable bridge, for a command that asks a brain
 * without a run: `planckclaw compact` with `PLANCKCLAW_BRAIN=PATH`. The
 * bridge is started as `run` starts it (the settings it reads, the brain
 * keys and no other secret, restarted when it fails) on the brain pipes of a
 * runtime directory made for this command alone, so a run beside it keeps
 * its own pipes and its own bridge. The agent's side is FifoBrain, as in a run.
 */
import * as os from "node:os"
import type * as ConfigError from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Brain } from "../ports/Brain.js"
import * as Bridges from "./Bridges.js"
import type { FifoError } from "./FifoPaths.js"
import * as RuntimeDir from "./RuntimeDir.js"
import * as ChildProcess from "../runtime/process/ChildProcess.js"
import type { Watchdog } from "../runtime/process/Watchdog.js"
import * as FifoBrain from "./FifoBrain.js"

/** A private directory (0700) for the command's pipes, removed with the layer (or by a later command, if this one is killed). */
const privateRunDir = Effect.mapError(
  ChildProcess.privateDirectory(os.tmpdir(), "planckclaw-brain-"),
  (error) => new RuntimeDir.RuntimeDirError({ reason: "io", message: `for the brain bridge's pipes, ${error.message}`, cause: error })
)

/** The Brain answered by the executable `command` over pipes of its own. */
export const layer = (
  command: string
): Layer.Layer<Brain, Bridges.FarEndFailure | RuntimeDir.RuntimeDirError | FifoError | ConfigError.ConfigError, Watchdog> =>
  Layer.unwrap(Effect.gen(function*() {
    const paths = yield* RuntimeDir.makeRuntimeDir(yield* privateRunDir)
    const timeout = yield* FifoBrain.BridgePatienceConfig
    // The bridge first, as in a run: its exits tell FifoBrain to ask the restarted one again.
    const nearEnd = Layer.unwrap(Effect.map(Bridges.BrainEnd, (end) => FifoBrain.layer({ paths, timeout, farEndExits: end.exits })))
    return nearEnd.pipe(
      Layer.provide(Bridges.brainEnd({ _tag: "External", path: command })),
      Layer.provide(Layer.succeed(RuntimeDir.RunPaths, paths))
    )
  }))
