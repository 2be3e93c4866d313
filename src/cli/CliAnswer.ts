/**
 * The command line as effect/cli parses it, and the command it chose (bin.ts).
 *
 * What effect/cli would print itself goes through our presenter instead: the
 * help people read is HelpText's, --version is the version alone, and a usage
 * mistake is one `planckclaw:` line on stderr saying what was wrong, the
 * nearest right name when one is near, and which --help says more (exit 2),
 * not effect/cli's help of the command followed by its error.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as CliConfig from "effect/cli/CliConfig"
import * as CliError from "effect/cli/CliError"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import * as Completions from "effect/cli/Completions"
import * as Flag from "effect/cli/Flag"
import * as GlobalFlag from "effect/cli/GlobalFlag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import { wordList } from "../config/ConfigRange.js"
import { packageVersion } from "../config/PackageRoot.js"
import * as HelpText from "./HelpText.js"
import * as PlainConsole from "./PlainConsole.js"

export const version = packageVersion()

/** The whole command line's type (a type only: Cli.js is not loaded for it). */
type EveryCommand = typeof import("./Cli.js")["command"]

const suggested = (suggestions: ReadonlyArray<string>): string =>
  suggestions.length === 0 ? "" : ` (did you mean ${suggestions.join(" or ")}?)`

/** effect/cli's `"a" | "b" | "c"` as `a, b or c`, and the names themselves. */
const choicesOf = (expected: string): ReadonlyArray<string> | undefined => {
  const names = expected.replace(/^Expected:?\s*/, "").split(" | ").map((name) => name.replace(/^"(.*)"$/, "$1"))
  return names.length > 1 ? names : undefined
}

/**
 * A usage mistake as planckclaw words it: what was wrong, and the nearest
 * right name when one is near (effect/cli's own suggestion for a flag or a
 * command, ours for a value). `command` is the command it was given to
 * (`serve`, `memory export`), empty for planckclaw itself.
 */
export const usageMessage = (error: CliError.NonShowHelpErrors, command: string): string => {
  const of = command === "" ? "" : ` for ${command}`
  switch (error._tag) {
    case "UnrecognizedOption":
      return `unknown option ${error.option}${of}${suggested(error.suggestions)}`
    case "UnexpectedArgument":
      return `unexpected argument${error.arguments.length === 1 ? "" : "s"} ${error.arguments.map((arg) => `'${arg}'`).join(" ")}${of}`
    case "UnknownSubcommand":
      return `unknown command '${[...(error.parent ?? []).slice(1), error.subcommand].join(" ")}'${suggested(error.suggestions)}`
    case "MissingOption":
      return `${command} needs --${error.option}`
    case "MissingArgument":
      return `${command} needs ${error.argument}`
    case "InvalidValue": {
      const names = choicesOf(error.expected)
      if (error.kind === "flag" && error.value === "") return `--${error.option} needs a value${names === undefined ? "" : `: ${wordList(names)}`}`
      const what = error.kind === "flag" ? `value '${error.value}' for --${error.option}` : `${error.option} '${error.value}'${of}`
      return names === undefined
        ? `invalid ${what}: ${error.expected.replace(/^Expected:?\s*/, "expected ")}`
        : `invalid ${what}: expected ${wordList(names)}${HelpText.didYouMean(error.value, names)}`
    }
    default:
      return error.message
  }
}

/**
 * What a usage mistake prints: one line on stderr, `planckclaw: `, each
 * mistake (`; ` between two), and where the right spelling is.
 */
export const usageLine = (errors: ReadonlyArray<CliError.NonShowHelpErrors>, commandPath: ReadonlyArray<string>): string => {
  const command = commandPath.slice(1).join(" ")
  const help = ["planckclaw", ...commandPath.slice(1), "--help"].join(" ")
  return `planckclaw: ${errors.map((error) => usageMessage(error, command)).join("; ")}: see ${help}`
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
        return Console.error(usageLine(event.errors, event.commandPath))
    }
  }
}

/**
 * The values a flag takes besides a path, which the completion scripts
 * offer: by command, then flag (effect/cli knows them only as text).
 */
const offered: Readonly<Record<string, Readonly<Record<string, ReadonlyArray<string>>>>> = {
  run: { bridge: ["cli", "discord", "none"], brain: ["anthropic", "openai", "none"], claw: ["scripts", "none"] },
  serve: { brain: ["anthropic", "openai"] },
  doctor: { brain: ["anthropic", "openai", "none"] }
}

/** The command tree's completions, with `offered` values for its text flags. */
export const completionsOf = (descriptor: Completions.CommandDescriptor): Completions.CommandDescriptor => ({
  ...descriptor,
  subcommands: descriptor.subcommands.map((command) => ({
    ...command,
    flags: command.flags.map((flag): Completions.FlagDescriptor => {
      const values = offered[command.name]?.[flag.name]
      return values === undefined || flag.type._tag !== "String" ? flag : { ...flag, type: { _tag: "Choice", values } }
    })
  }))
})

/** `--completions SHELL`: effect/cli's script for the shells HelpText names, with completionsOf's values. */
const completions = GlobalFlag.Action({
  flag: Flag.ChoiceWithValue("completions", [["bash", "bash"], ["zsh", "zsh"], ["fish", "fish"], ["sh", "bash"]] as ReadonlyArray<
    readonly [string, Completions.Shell]
  >).pipe(Flag.optional, Flag.withMetavar("<bash|zsh|fish|sh>"), Flag.withDescription("Print shell completion script")),
  run: (shell, { command }) =>
    Option.match(shell, {
      onNone: () => Effect.void,
      onSome: (shell) => Console.log(Completions.generate(command.name, shell, completionsOf(Completions.fromCommand(command))))
    })
})

/**
 * effect/cli's global flags as HelpText documents them: --help (-h),
 * --version (-v), --completions and --log-level (anywhere on the line);
 * not its --wizard, whose questions no planckclaw user was told of.
 */
const builtIns: ReadonlyArray<GlobalFlag.BuiltIn> = [GlobalFlag.Help, GlobalFlag.Version, completions, GlobalFlag.LogLevel]

/**
 * What effect/cli needs: a file system, paths, the terminal, standard input
 * and output, our presenter and global flags. Nothing here spawns a process
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
  CliOutput.layerPresenter(presenter),
  CliConfig.layer({ builtIns })
)

/**
 * effect/cli's parse of `args` (after `planckclaw`) with `command`, and the
 * command it chose. A help or a usage mistake it printed (through
 * `presenter`) fails with its CliError.ShowHelp, whose exit code Main picks.
 * What effect/cli prints itself goes through PlainConsole (no colour codes
 * into a pipe); the command runs with the ordinary console (CliSettings).
 */
export const parseAndRun = <Name extends string, Input, ContextInput, E, R>(
  command: Command.Command<Name, Input, ContextInput, E, R>,
  args: ReadonlyArray<string> = process.argv.slice(2)
) =>
  Console.consoleWith((console) =>
    Command.runWith(command, { version })(args).pipe(
      Effect.provide(environment),
      Effect.provideService(Console.Console, PlainConsole.make(console))
    )
  )

/** effect/cli's parse of the whole command line and the command it chose, with every command's failures and needs. */
export type CommandLine = ReturnType<typeof parseAndRun<"planckclaw", unknown, {}, Command.Error<EveryCommand>, Command.Services<EveryCommand>>>
