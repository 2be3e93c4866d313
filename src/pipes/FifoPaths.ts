/**
 * The six named pipes: their names, their paths in a runtime directory, the
 * variables an external bridge receives them in, and the error of pipe I/O.
 */
import * as path from "node:path"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Option from "effect/Option"
import { PipePaths, RunDir } from "../config/settings/Agent.js"

/** A pipe could not be opened, read or written. (Laying out the directory fails with RuntimeDirError.) */
export class FifoError extends Data.TaggedError("FifoError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Where the six pipes live. `runDir` holds them and the pid file. */
export interface FifoPaths {
  readonly runDir: string
  readonly interactIn: string
  readonly interactOut: string
  readonly brainIn: string
  readonly brainOut: string
  readonly clawIn: string
  readonly clawOut: string
}

export const fifoNames = {
  interactIn: "interact_in",
  interactOut: "interact_out",
  brainIn: "brain_in",
  brainOut: "brain_out",
  clawIn: "claw_in",
  clawOut: "claw_out"
} as const

export type FifoKey = keyof typeof fifoNames
export const fifoKeys = Object.keys(fifoNames) as ReadonlyArray<FifoKey>

export const pidFileName = "planckclaw.pid"
export const defaultRunDir = RunDir.default

export const fifoPaths = (runDir: string): FifoPaths => {
  const dir = path.resolve(runDir)
  return {
    runDir: dir,
    interactIn: path.join(dir, fifoNames.interactIn),
    interactOut: path.join(dir, fifoNames.interactOut),
    brainIn: path.join(dir, fifoNames.brainIn),
    brainOut: path.join(dir, fifoNames.brainOut),
    clawIn: path.join(dir, fifoNames.clawIn),
    clawOut: path.join(dir, fifoNames.clawOut)
  }
}

/** The variables an external bridge receives, and a bridge process reads back. */
export const fifoEnvNames = {
  runDir: RunDir.key,
  interactIn: PipePaths.interactIn.key,
  interactOut: PipePaths.interactOut.key,
  brainIn: PipePaths.brainIn.key,
  brainOut: PipePaths.brainOut.key,
  clawIn: PipePaths.clawIn.key,
  clawOut: PipePaths.clawOut.key
} as const

/**
 * `PLANCKCLAW_RUN_DIR` (default `/tmp/planckclaw`) gives all six paths; each
 * `PLANCKCLAW_<PIPE>` overrides one, as an external bridge receives them.
 */
export const fifoPathsConfig: Config.Config<FifoPaths> = Config.all({
  runDir: Config.String(fifoEnvNames.runDir).pipe(Config.withDefault(defaultRunDir)),
  overrides: Config.all(
    Object.fromEntries(fifoKeys.map((key) => [key, Config.option(Config.String(fifoEnvNames[key]))])) as {
      [K in FifoKey]: Config.Config<Option.Option<string>>
    }
  )
}).pipe(
  Config.map(({ overrides, runDir }) => {
    const defaults = fifoPaths(runDir)
    return {
      ...defaults,
      ...Object.fromEntries(fifoKeys.map((key) => [key, Option.getOrElse(overrides[key], () => defaults[key])]))
    } as FifoPaths
  })
)

