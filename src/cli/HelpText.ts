/**
 * The help: `planckclaw --help`, `planckclaw CMD --help`, `planckclaw help
 * [CMD|config]`. Written for people (every option described, usage lines
 * that start with `planckclaw`, an example at the end) and plain text unless
 * standard output is a terminal and NO_COLOR is unset. No imports beyond the
 * key table and the command entries (HelpCommands.ts): `bin/planckclaw`
 * answers help and `--version` with this module alone, without loading the
 * agent. test/cli/Help.test.ts holds every command and option of
 * src/cli/Cli.ts to an entry here.
 */
import { commands, globalOptions, type CommandHelp, type OptionHelp } from "./HelpCommands.js"
import { keySections } from "./HelpConfig.js"

export { type CommandHelp, commands, type OptionHelp } from "./HelpCommands.js"

/** Colour only for a terminal, and never under NO_COLOR (https://no-color.org) or TERM=dumb. */
export const colorAllowed = (
  stream: { readonly isTTY?: boolean },
  environment: Record<string, string | undefined> = process.env
): boolean => stream.isTTY === true && (environment["NO_COLOR"] ?? "") === "" && environment["TERM"] !== "dumb"

const heading = (text: string, color: boolean) => (color ? `\u001b[1m${text}\u001b[0m` : text)

/**
 * Wraps `first` + `text` to `width` columns, every line after the first indented by `indent`.
 * A `first` ending in a space (a name padded to the description's column) is followed at once.
 */
const wrap = (text: string, width: number, indent: string, first = ""): string => {
  const lines: Array<string> = []
  let line = first
  for (const word of text.split(/\s+/)) {
    if (line.trim() !== "" && line.length + 1 + word.length > width) {
      lines.push(line)
      line = indent + word
    } else line = line.trim() === "" || line.endsWith(" ") ? line + word : `${line} ${word}`
  }
  lines.push(line)
  return lines.join("\n")
}

const list = (items: ReadonlyArray<OptionHelp>): Array<string> => {
  const width = Math.min(24, Math.max(...items.map((item) => item.name.length)) + 2)
  return items.map((item) => {
    const name = `  ${item.name}`.padEnd(width + 2)
    const pad = " ".repeat(width + 2)
    return name.length > width + 2
      ? `${name}\n${wrap(item.description, 78, pad, pad)}`
      : wrap(item.description, 78, pad, name)
  })
}

const section = (title: string, body: ReadonlyArray<string>, color: boolean) => [heading(title, color), ...body, ""]

export const commandHelp = (command: CommandHelp, color: boolean): string =>
  [
    ...section("Usage", command.usage.map((line) => `  ${line}`), color),
    wrap(command.description, 78, ""),
    "",
    ...(command.arguments !== undefined ? section("Arguments", list(command.arguments), color) : []),
    ...(command.options.length > 0 ? section("Options", list(command.options), color) : []),
    ...section("Example", command.examples.map((line) => `  $ ${line}`), color)
  ].join("\n")

export const overview = (color: boolean): string =>
  [
    "planckclaw: a personal AI agent in your terminal, on Discord or behind HTTP.",
    "Claude or any Chat Completions model thinks, shell-script claws act, and",
    "its memory compacts itself.",
    "",
    ...section("Usage", ["  planckclaw COMMAND [OPTIONS]", "  planckclaw COMMAND --help", "  planckclaw help config"], color),
    ...section("Commands", list(commands.map((command) => ({ name: command.name, description: command.summary }))), color),
    ...section("Options", list(globalOptions), color),
    wrap(
      "Settings come from config.env in the home (PLANCKCLAW_HOME; else the current directory if it is a home: " +
        "its config.env beside memory/, claws/ or agents/; else ~/.planckclaw), then the environment, then flags. " +
        "`planckclaw help config` lists them.",
      78,
      ""
    ),
    "",
    ...section("Example", ["  $ planckclaw init && planckclaw run"], color)
  ].join("\n")

export const configHelp = (color: boolean): string =>
  [
    wrap(
      "config.env is read from the home, as shell assignments: export KEY=\"value\" (export optional, single or " +
        "double quotes, # comments, $VAR and ${VAR} from the environment and earlier lines; $(...) is refused, never " +
        "run). Then the environment, then flags override it. Empty values count as unset. Relative paths in config.env " +
        "are relative to the home. Every value is checked at start-up.",
      78,
      ""
    ),
    "",
    ...keySections.flatMap((keys) =>
      section(keys.title, keys.keys.flatMap((key) => [
        `  ${key.key}`,
        wrap(key.meaning, 78, "      ", "      "),
        wrap(`default: ${key.default}; accepts: ${key.range}`, 78, "        ", "      ")
      ]), color)
    ),
    ...section("Example", ["  $ planckclaw help config | grep -A1 HISTORY_"], color)
  ].join("\n")

/** Edit distance (Levenshtein). */
export const distance = (a: string, b: string): number => {
  let row = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)))
    row = next
  }
  return row[b.length]!
}

/** ` (did you mean X?)` for the nearest of `candidates` within two edits of `input`, else nothing. */
export const didYouMean = (input: string, candidates: ReadonlyArray<string>): string => {
  const near = candidates.filter((candidate) => distance(input, candidate) <= 2)
    .sort((a, b) => distance(input, a) - distance(input, b))
  return near.length === 0 ? "" : ` (did you mean ${near[0]}?)`
}

export type Answer =
  | { readonly _tag: "Print"; readonly text: string; readonly code: number; readonly toStderr?: boolean }
  | { readonly _tag: "NotHelp" }

const print = (text: string, code = 0, toStderr = false): Answer => ({ _tag: "Print", text, code, toStderr })

/**
 * What the arguments (after `planckclaw`) ask of the help, if anything.
 * A command this module does not know is left to the command line.
 */
export const answer = (
  args: ReadonlyArray<string>,
  options: {
    readonly version: string
    readonly color: boolean
    /** Every command the command line has, when known: any other word is refused rather than left to it. */
    readonly known?: ReadonlyArray<string>
  }
): Answer => {
  const { color } = options
  const named = (name: string | undefined) => commands.find((command) => command.name === name)
  if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) return print(options.version)
  if (args.length === 0) return print(overview(color))
  if (args[0] === "help") {
    const topic = args[1]
    if (topic === undefined) return print(overview(color))
    if (topic === "--help" || topic === "-h") return print(commandHelp(named("help")!, color))
    if (topic === "config") return print(configHelp(color))
    const command = named(topic)
    if (command !== undefined) return print(commandHelp(command, color))
    const topics = [...commands.map((command) => command.name), "config"]
    return print(`planckclaw: no help on '${topic}'${didYouMean(topic, topics)}: try ${topics.join(", ")}`, 2, true)
  }
  const asked = args.findIndex((arg) => arg === "--help" || arg === "-h")
  if (asked === -1) return { _tag: "NotHelp" }
  // The command is the first word before --help that is not an option (nor --log-level's value).
  const before = args.slice(0, asked)
  const first = before.find((arg, index) => !arg.startsWith("-") && before[index - 1] !== "--log-level")
  if (first === undefined) return print(overview(color))
  const command = named(first)
  if (command !== undefined) return print(commandHelp(command, color))
  return options.known !== undefined && !options.known.includes(first)
    ? print(`planckclaw: unknown command '${first}'${didYouMean(first, options.known)}: see planckclaw --help`, 2, true)
    : { _tag: "NotHelp" }
}

/**
 * The help's words for `name` (an option such as `--bridge`, or an argument
 * such as `NAME`) of `command`, which the command line's flags and arguments
 * carry too (completion scripts show them): one wording, written here.
 * Empty for one the help lacks, which test/cli/Help.test.ts refuses.
 */
export const describe = (command: string, name: string): string => {
  const entry = commands.find((help) => help.name === command)
  const described = [...(entry?.options ?? []), ...(entry?.arguments ?? [])]
  return described.find((option) => option.name.split(" ")[0] === name)?.description ?? ""
}

/** The help's one-line summary of `command`, as the overview lists it. */
export const summary = (command: string): string => commands.find((help) => help.name === command)?.summary ?? ""
