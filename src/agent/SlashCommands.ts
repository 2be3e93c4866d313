/**
 * Slash commands, understood by the agent itself so every bridge has them
 * (terminal, pipes, Discord's slash commands translated into these texts,
 * external bridges, the HTTP service). A message whose whole text is a
 * command is answered here: it never reaches the model and nothing of it
 * goes into history. Text like `/etc/hosts` is an ordinary message.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import type { ClawsService, ToolCatalog } from "../ports/Claws.js"
import type { CompactionReport, CompactorService } from "./Compactor.js"
import * as Forget from "../memory/Forget.js"
import type { MemoryService } from "../memory/Memory.js"
import * as UsageLedger from "../usage/UsageLedger.js"
import type { PriceTable } from "../usage/Prices.js"
import * as UsageReport from "../usage/UsageReport.js"

export type Command = Data.TaggedEnum<{
  Help: {}
  Tools: {}
  Compact: {}
  Usage: {}
  Forget: { readonly confirm: boolean }
  /** `/quit` reaching the agent: it belongs to the terminal. */
  Quit: {}
  /** A slash word the agent does not know, or a known one with text after it it does not take. */
  Unknown: { readonly command: string }
}>
export const Command = Data.taggedEnum<Command>()

/** A slash, a word, then a space or the end: `/etc/hosts` is not a command. */
const SLASH_WORD = /^\/([a-z][a-z-]*)(?:\s+([\s\S]*))?$/i

/** The command a message's whole text is, if it is one. */
export const parse = (text: string): Option.Option<Command> => {
  const match = SLASH_WORD.exec(text.trim())
  if (match === null) return Option.none()
  const name = match[1]!.toLowerCase()
  const rest = (match[2] ?? "").trim()
  const bare = rest.length === 0
  switch (name) {
    case "help":
      if (bare) return Option.some(Command.Help())
      break
    case "tools":
      if (bare) return Option.some(Command.Tools())
      break
    case "compact":
      if (bare) return Option.some(Command.Compact())
      break
    case "usage":
      if (bare) return Option.some(Command.Usage())
      break
    case "forget":
      if (bare || rest.toLowerCase() === "confirm") return Option.some(Command.Forget({ confirm: !bare }))
      break
    case "quit":
      if (bare) return Option.some(Command.Quit())
      break
  }
  return Option.some(Command.Unknown({ command: bare ? `/${match[1]}` : `/${match[1]} ${rest}`.slice(0, 80) }))
}

/** The list of commands, with a bridge's own (the terminal's /quit) after the agent's. */
export const helpText = (bridgeCommands: ReadonlyArray<string> = []): string =>
  [
    "Commands:",
    "/help            this list",
    "/tools           the tools I can use",
    "/compact         fold old history into the summary now",
    "/usage           tokens and estimated cost so far",
    "/forget          archive our conversation and start afresh (asks first)",
    ...bridgeCommands,
    "Anything else is a message for me."
  ].join("\n")

export const HELP = helpText()

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

const bytes = (size: number): string =>
  size < 1024 ? plural(size, "byte") : size < 1024 * 1024 ? `${(size / 1024).toFixed(1)} KiB` : `${(size / 1024 / 1024).toFixed(1)} MiB`

/** Names and first lines of the descriptions, then what could not be read. */
export const renderTools = (catalog: ToolCatalog): string => {
  const lines = catalog.tools.length === 0
    ? ["No tools: the claws declare none."]
    : [
      `${plural(catalog.tools.length, "tool")}:`,
      ...catalog.tools.map((tool) => {
        const description = tool.description.trim().split("\n")[0]!.trim()
        return description.length === 0 ? tool.name : `${tool.name} — ${description}`
      })
    ]
  if (catalog.problems.length > 0) {
    lines.push(
      `${plural(catalog.problems.length, "declaration")} could not be read:`,
      ...catalog.problems.map((problem) => `${problem.source}: ${problem.reason}`)
    )
  }
  return lines.join("\n")
}

export const renderCompaction = (report: Option.Option<CompactionReport>): string =>
  Option.match(report, {
    onNone: () => "Nothing to compact: history holds no lines older than the last HISTORY_KEEP.",
    onSome: (done) =>
      `Compacted: summarised ${plural(done.summarised, "line")} into the summary (${bytes(done.summaryBytes)}, ` +
      `${plural(done.requests, "request")}); kept ${plural(done.kept, "line")} in history` +
      (done.skipped > 0 ? `; dropped ${plural(done.skipped, "undecodable line")}` : "") + "."
  })

/** How the /forget answer ends; the terminal asks y/N instead (TerminalInteract.ts). */
export const FORGET_ASK = "Send /forget confirm to do it."

export const renderForgetPreview = (found: Forget.ForgetPreview): string =>
  Forget.isEmpty(found)
    ? "There is nothing to forget: history and summary are empty."
    : `This archives our conversation (${plural(found.historyLines, "history line")}, ${bytes(found.historyBytes)}` +
      `${found.summaryBytes > 0 ? `, and the summary, ${bytes(found.summaryBytes)}` : ""}) into ${found.location ?? "archive/ in the memory directory"}` +
      `, and I start afresh; nothing is deleted. ${FORGET_ASK}`

/** What the commands use of the agent. */
export interface CommandPorts {
  readonly claws: ClawsService
  readonly compactor: CompactorService
  readonly memory: MemoryService
  /** The price table, or why it could not be read (a bad PLANCKCLAW_PRICES). */
  readonly prices: Result.Result<PriceTable, string>
  /** Run after a forget moved memory away: the agent drops what it keeps of the old conversation. */
  readonly forgotten: Effect.Effect<void>
}

/** The reply to a command. Never fails: a failure is the reply. */
export const make = (ports: CommandPorts) => {
  const { claws, compactor, memory } = ports

  const usage = Effect.sync(() => {
    const file = path.join(memory.directory, UsageLedger.FILE_NAME)
    if (!fs.existsSync(file)) return "No usage ledger yet: nothing has been counted."
    if (Result.isFailure(ports.prices)) return `Cannot price the usage: ${ports.prices.failure}`
    const prices = ports.prices.success
    return Result.match(UsageLedger.read(file), {
      onFailure: (error) => `Cannot read the usage ledger: ${error.message}`,
      onSuccess: (ledger) => UsageReport.render(UsageReport.report(ledger.lines, ledger.skipped, prices, undefined))
    })
  })

  const compact = compactor.compactNow.pipe(
    Effect.map(renderCompaction),
    Effect.catch((error) => {
      switch (error._tag) {
        case "CompactionBusy":
          return Effect.succeed(`A compaction is already running (process ${error.ownerPid}); try again shortly.`)
        case "CompactionFailed":
          return Effect.succeed(`Compaction failed: ${error.message}. History is intact.`)
        case "MemoryError":
          return Effect.succeed(`Compaction failed: ${error.message}. History is intact.`)
      }
    })
  )

  const forget = Effect.gen(function*() {
    const stamp = Forget.stampOf(yield* Clock.currentTimeMillis)
    const outcome = yield* Effect.result(memory.forget(stamp))
    // Only a forget that happened costs the old conversation its waiting exchanges.
    if (Result.isSuccess(outcome) && Option.isSome(outcome.success)) yield* ports.forgotten
    if (Result.isFailure(outcome)) {
      yield* Effect.logError(`forget failed: ${outcome.failure.message}`)
      return `Could not forget: ${outcome.failure.message}.`
    }
    return Option.match(outcome.success, {
      onNone: () => "There was nothing to forget: history and summary were empty.",
      onSome: (done) => {
        // The ledger goes with history, unnamed: people know the two files they can read.
        const named = done.files.filter((file) => !file.startsWith("."))
        // Relative: a reply may go to a Discord channel, which has no business knowing the host's paths.
        return `Forgotten: ${named.join(" and ")} moved to ${done.location ?? `${done.archive}/ in the memory directory`}. ` +
          "The next message starts afresh."
      }
    })
  })

  return (command: Command): Effect.Effect<string> =>
    Command.$match(command, {
      Help: () => Effect.succeed(HELP),
      Tools: () =>
        claws.list.pipe(
          Effect.map(renderTools),
          Effect.catch((error) => Effect.succeed(`Cannot list the tools: ${error.message}`))
        ),
      Compact: () => compact,
      Usage: () => usage,
      Forget: ({ confirm }) => confirm ? forget : memory.forgetPreview.pipe(
          Effect.map(renderForgetPreview),
          Effect.catch((error) => Effect.succeed(`Cannot tell what /forget would archive: ${error.message}.`))
        ),
      Quit: () => Effect.succeed("/quit ends a terminal session; here there is nothing to quit. /help lists the commands."),
      Unknown: ({ command }) => Effect.succeed(`unknown command ${command} — /help lists the commands`)
    })
}
