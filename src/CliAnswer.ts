/**
 * The command line as @effect/cli parses it: help and --version first (see
 * Main.answerWith), then its parse and the command it chose. The whole
 * command line's (bin.ts) only: a plain `run` line starts from RunMain's
 * bundle, which has none of @effect/cli's modules.
 */
import * as Command from "effect/cli/Command"
import * as ValidationError from "effect/cli/CliError"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import { answerWith, version } from "./Main.js"

/** The whole command line's type (a type only: Cli.js is not loaded for it). */
type EveryCommand = typeof import("./Cli.js")["command"]

/** @effect/cli's wizard would wait at a pipe for answers that never come. */
const wizardWithoutTerminal = Effect.suspend(() =>
  process.argv.slice(2).includes("--wizard") && process.stdin.isTTY !== true
    ? Effect.as(Console.error("planckclaw: --wizard asks its questions at a terminal, and standard input is not one"), true)
    : Effect.succeed(false)
)

/** Help, or @effect/cli's parse of `command` and the command it chose; a usage problem exits 2. */
export const answer = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>) =>
  answerWith(
    [...HashMap.keys(Command.getSubcommands(command))],
    Effect.flatMap(wizardWithoutTerminal, (refused) =>
      refused ? Effect.succeed(2) : Command.run(command, { name: "planckclaw", version })(process.argv).pipe(
        Effect.as(0),
        // @effect/cli has printed the usage problem already.
        Effect.catchIf(ValidationError.isValidationError, () => Effect.succeed(2)),
        // What @effect/cli needs (a file system, paths, the terminal): not NodeContext's
        // command executor and worker manager, which nothing here uses and which cost start-up time.
        Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer))
      ))
  )

/** Help, a parse and the command it chose, with every command's failures and needs. */
export type CommandLine = EveryCommand extends Command.Command<"planckclaw", infer R, infer E, infer A>
  ? ReturnType<typeof answer<"planckclaw", R, E, A>>
  : never
