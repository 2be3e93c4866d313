/**
 * `planckclaw run` as an effect/cli command, and a command line holding
 * only it: `bin.ts` parses a `run` with this one, so a start loads only what
 * a run needs (not serve's HTTP server, the doctor, SQL or init). Cli.ts
 * lists it with the others. What the run does is in RunProgram, which a
 * plain `run` line uses without loading effect/cli (see RunMain).
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { brainOption, debugOption } from "../CliFlags.js"
import { runWith } from "./RunProgram.js"

export { plainRunOptions, type RunOptions, runWith } from "./RunProgram.js"

const bridgeOption = Flag.String("bridge").pipe(
  Flag.withDefault("cli"),
  Flag.withDescription(
    "interact bridge: cli (terminal), discord, none (nothing serves the interact pipes) or a path to an executable"
  )
)
const clawOption = Flag.String("claw").pipe(
  Flag.withDefault("scripts"),
  Flag.withDescription("claw bridge: scripts (CLAWS_DIR/*.sh), none (served from outside) or an executable")
)

export const runOptions = { bridge: bridgeOption, brain: brainOption, claw: clawOption, debug: debugOption }

/**
 * `planckclaw run` (RunProgram.runWith): its layers for the bridges the flags
 * choose, inside the settings, which come before anything the layers start
 * (and the secrets' withdrawal with them).
 */
export const run = Command.make("run", runOptions, runWith).pipe(
  Command.withDescription("Run the agent: answer messages from the chosen bridge until its input ends.")
)

/** The top command's description (the help people read is HelpText's). */
export const description =
  "A personal AI agent: terminal or Discord, Claude or any Chat Completions model, shell-script claws, self-compacting memory."

/** `planckclaw` with `run` as its only subcommand: what bin.ts parses a `run` with. */
export const runOnly = Command.make("planckclaw").pipe(
  Command.withDescription(description),
  Command.withSubcommands([run])
)
