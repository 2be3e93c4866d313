/**
 * The command line as effect/cli parses it: help and --version first (see
 * Main.answerWith), then its parse and the command it chose. The whole
 * command line's (bin.ts) only: a plain `run` line starts from RunMain's
 * bundle, which has none of effect/cli's modules.
 *
 * What effect/cli would print itself goes through our presenter instead: the
 * help people read is HelpText's, --version is the version alone, and a usage
 * mistake is one line per problem on stderr, in the words planckclaw has always
 * used for an unknown or missing flag, argument or command (not effect/cli's
 * help of the command followed by its own wording).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as CliError from "effect/cli/CliError"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import type * as HelpDoc from "effect/cli/HelpDoc"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as HelpText from "./HelpText.js"
import { answerWith, version } from "./Main.js"

/** The whole command line's type (a type only: Cli.js is not loaded for it). */
type EveryCommand = typeof import("./Cli.js")["command"]

/** A usage mistake as planckclaw words it. */
export const usageMessage = (error: CliError.NonShowHelpErrors, help: HelpDoc.HelpDoc): string => {
  switch (error._tag) {
    case "UnrecognizedOption":
      return `Received unknown argument: '${error.option}'`
    case "UnexpectedArgument":
      return `Received unknown argument: '${error.arguments[0] ?? ""}'`
    case "UnknownSubcommand": {
      const names = (help.subcommands ?? []).flatMap((group) => group.commands.map((command) => `'${command.name}'`))
      return `Invalid subcommand for ${(error.parent ?? help.commandPath ?? ["planckclaw"]).join(" ")} - use one of ${names.join(", ")}`
    }
    case "MissingOption":
      return `Expected to find option: '--${error.option}'`
    case "MissingArgument":
      return `Missing argument <${error.argument}>`
    default:
      return error.message
  }
}

/** The help of the command at `path` (`planckclaw`, `planckclaw memory`, `planckclaw memory export`), HelpText's. */
const helpAt = (path: ReadonlyArray<string>): string => {
  const color = HelpText.colorAllowed(process.stdout)
  const command = HelpText.commands.find((help) => help.name === path[1])
  return command === undefined ? HelpText.overview(color) : HelpText.commandHelp(command, color)
}

/** What effect/cli would print itself, as planckclaw prints it. */
export const presenter: CliOutput.Presenter = {
  present: (event) => {
    switch (event._tag) {
      case "Help":
        return Console.log(helpAt(event.commandPath))
      case "Version":
        return Console.log(event.version)
      case "InvalidInvocation":
        return Console.error(event.errors.map((error) => usageMessage(error, event.helpDoc)).join("\n"))
    }
  }
}

/**
 * What effect/cli needs: a file system, paths, the terminal (the wizard's
 * questions), standard input and output. Nothing here spawns a process
 * through effect/cli (its spawner serves flags that run commands, which
 * planckclaw has none of), so its spawner is one that refuses, rather
 * than platform-node's, whose modules a start would load for nothing.
 */
const environment = Layer.mergeAll(
  NodeFileSystem.layer,
  NodePath.layer,
  NodeTerminal.layer,
  NodeStdio.layer,
  Layer.succeed(
    ChildProcessSpawner.ChildProcessSpawner,
    ChildProcessSpawner.make(() => Effect.die(new Error("planckclaw's command line spawns no process through effect/cli")))
  ),
  CliOutput.layerPresenter(presenter)
)

/** The usage mistake effect/cli printed (through `presenter`): none for a help it printed instead of a command. */
const isShowHelp = (error: unknown): error is CliError.ShowHelp => CliError.isCliError(error) && error._tag === "ShowHelp"

/**
 * effect/cli's parse of `args` (after `planckclaw`) with `command`, and the
 * command it chose: 0 once that has run, 2 for a usage mistake, which has
 * been printed.
 */
export const parseAndRun = <Name extends string, Input, ContextInput, E, R>(
  command: Command.Command<Name, Input, ContextInput, E, R>,
  args: ReadonlyArray<string>
) =>
  Command.runWith(command, { version })(args).pipe(
    Effect.as(0),
    Effect.catchIf(isShowHelp, (help) => Effect.succeed(help.errors.length === 0 ? 0 : 2)),
    Effect.provide(environment)
  )

/** effect/cli's wizard would wait at a pipe for answers that never come. */
const wizardWithoutTerminal = Effect.suspend(() =>
  process.argv.slice(2).includes("--wizard") && process.stdin.isTTY !== true
    ? Effect.as(Console.error("planckclaw: --wizard asks its questions at a terminal, and standard input is not one"), true)
    : Effect.succeed(false)
)

/** Help, or effect/cli's parse of `command` and the command it chose; a usage problem exits 2. */
export const answer = <Name extends string, Input, ContextInput, E, R>(
  command: Command.Command<Name, Input, ContextInput, E, R>
) =>
  answerWith(
    command.subcommands.flatMap((group) => group.commands.map((subcommand) => subcommand.name)),
    Effect.flatMap(
      wizardWithoutTerminal,
      (refused) => refused ? Effect.succeed(2) : parseAndRun(command, process.argv.slice(2))
    )
  )

/** Help, a parse and the command it chose, with every command's failures and needs. */
export type CommandLine = ReturnType<typeof answer<"planckclaw", unknown, {}, Command.Error<EveryCommand>, Command.Services<EveryCommand>>>
