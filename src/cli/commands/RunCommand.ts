/**
 * `planckclaw run` as an effect/cli command (Cli.ts lists it with the
 * others). What the run does, and its Layers, are in RunProgram.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { brainOption, debugOption, modelOption, verboseOption } from "../CliFlags.js"
import * as HelpText from "../HelpText.js"
import { runWith } from "./RunProgram.js"

export { plainRunOptions, type RunOptions, runWith } from "./RunProgram.js"

const bridgeOption = Flag.String("bridge").pipe(
  Flag.withDefault("cli"),
  Flag.withDescription(HelpText.describe("run", "--bridge"))
)
const clawOption = Flag.String("claw").pipe(
  Flag.withDefault("scripts"),
  Flag.withDescription(HelpText.describe("run", "--claw"))
)

export const runOptions = { bridge: bridgeOption, brain: brainOption, claw: clawOption, model: modelOption, debug: debugOption, verbose: verboseOption }

/**
 * `planckclaw run` (RunProgram.runWith): its layers for the bridges the flags
 * choose, inside the settings, which come before anything the layers start
 * (and the secrets' withdrawal with them).
 */
export const run = Command.make("run", runOptions, runWith).pipe(Command.withDescription(HelpText.summary("run")))
