/**
 * What the host reads of its agents' files without starting them: a page of
 * an agent's history, newest first (read backwards from the end, never the
 * whole file), and the usage ledgers (usage.jsonl) of one agent or of all,
 * summed per agent and day for a period; its soul and summary; its schedule.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type { AgentId } from "./AgentId.js"
import { HostError } from "./HostError.js"
import { type ScheduleList, schedulesOf } from "./AgentSchedules.js"
import * as BackwardLines from "../../memory/BackwardLines.js"
import type * as FallbackSoul from "../../memory/FallbackSoul.js"
import * as SafeFile from "../../runtime/SafeFile.js"
import { parseLine } from "../../memory/HistoryFile.js"
import { nextTurn } from "../../runtime/process/NextTurn.js"
import type { PriceTable } from "../../usage/Prices.js"
import * as UsageLedger from "../../usage/UsageLedger.js"
import * as UsageReport from "../../usage/UsageReport.js"

/** Exchanges in a history page: at most this many. */
export const HISTORY_LIMIT_MAX = 200
export const HISTORY_LIMIT_DEFAULT = 50

export interface HistoryEntryAt {
  /** Where the line starts in history.jsonl (the cluster: the row's sequence number): give it as `before` for the entries older than this one. */
  readonly at: number
  readonly role: "user" | "assistant"
  readonly content: string
}

export interface HistoryPage {
  /** Newest first. */
  readonly entries: ReadonlyArray<HistoryEntryAt>
  /** The `before` of the next (older) page; null when this page reached the first line. */
  readonly next: number | null
}

/** Why a history page is not given: a cursor that is no line's start (a bad query), or a file that cannot be read. */
export interface HistoryRefused {
  readonly reason: "bad-query" | "unavailable"
  readonly message: string
}

/**
 * Up to `limit` lines of `directory`'s history that start before byte
 * `before` (the whole file when absent; a `before` past its end counts from
 * its end), newest first. Lines that do not decode are passed over. A
 * `before` inside a line is refused: no page gives it, and the lines before
 * it would be answered as if it were one (or nothing, in the first line). A
 * compaction rewrites the file, so a cursor taken before it points into the
 * new file (refused, or a page that does not go on from the last one): a
 * client then starts again from the newest page.
 */
export const historyPage = (directory: string, before: number | undefined, limit: number): Result.Result<HistoryPage, HistoryRefused> =>
  Result.flatMap(Result.try({
    try: (): Result.Result<HistoryPage, HistoryRefused> => {
      const file = path.join(directory, "history.jsonl")
      const fd = Result.try(() => fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK))
      if (Result.isFailure(fd)) return Result.succeed({ entries: [], next: null })
      try {
        const size = BackwardLines.sizeOf(fd.success)
        if (before !== undefined && !BackwardLines.startsLine(fd.success, before, size)) {
          return Result.fail({
            reason: "bad-query",
            message: `before=${before} does not point at the start of a line of the history: give an entry's \`at\` or a page's \`next\` (after a compaction, start again from the newest page)`
          })
        }
        const end = before === undefined ? size : Math.min(before, size)
        const page = BackwardLines.pageBackward(fd.success, end, limit, ({ line, offset }) =>
          Option.getOrUndefined(Option.map(parseLine(line), (entry): HistoryEntryAt => ({ at: offset, ...entry }))))
        return Result.succeed({ entries: page.items, next: page.next })
      } finally {
        fs.closeSync(fd.success)
      }
    },
    catch: (error): HistoryRefused => ({ reason: "unavailable", message: `cannot read the history: ${String(error)}` })
  }), (read) => read)

/** A period of days (UTC), both ends included; either may be open. */
export interface Period {
  readonly since?: string | undefined
  readonly until?: string | undefined
}

/**
 * One agent's ledger summed per day and model for `period`, as `planckclaw usage` reports it; a period with
 * a first day is read from the ledger's end back to that day only (UsageLedger.readFromDay).
 */
export const usageOf = (directory: string, prices: PriceTable, period: Period): Result.Result<UsageReport.Report, string> => {
  const file = path.join(directory, UsageLedger.FILE_NAME)
  return Result.map(
    Result.mapError(period.since === undefined ? UsageLedger.read(file) : UsageLedger.readFromDay(file, period.since), (error) => error.message),
    (ledger) => UsageReport.report(ledger.lines, ledger.skipped, prices, period.since, period.until)
  )
}

export interface AllUsage {
  readonly since: string | null
  readonly until: string | null
  /** Per agent and day, by agent id then day; only agents and days with usage. */
  readonly rows: ReadonlyArray<UsageReport.AgentDay>
  readonly total: UsageReport.Totals
}

/** Agents whose ledger is read per step: the other agents' turns go on between steps. */
const agentsPerStep = 32

/** Every agent's ledger among `ids`, summed per agent and day for `period`; a ledger that cannot be read counts as empty. */
export const usageOfAll = (
  ids: ReadonlyArray<string>,
  directoryOf: (id: string) => string,
  prices: PriceTable,
  period: Period
): Effect.Effect<AllUsage> =>
  Effect.gen(function*() {
    const rows: Array<UsageReport.AgentDay> = []
    for (let index = 0; index < ids.length; index++) {
      if (index > 0 && index % agentsPerStep === 0) yield* nextTurn
      const id = ids[index]!
      const report = usageOf(directoryOf(id), prices, period)
      if (Result.isSuccess(report)) rows.push(...UsageReport.perDay(id, report.success))
    }
    return allUsageOf(period, rows)
  })

/** The answer of `usageAll` for the rows of a period (per agent and day, by agent id then day): the rows and their total. */
export const allUsageOf = (period: Period, rows: ReadonlyArray<UsageReport.AgentDay>): AllUsage => {
  const sum = (pick: (row: UsageReport.AgentDay) => number) => rows.reduce((total, row) => total + pick(row), 0)
  const unpriced = rows.some((row) => row.cost === null)
  return {
    since: period.since ?? null,
    until: period.until ?? null,
    rows,
    total: {
      requests: sum((row) => row.requests),
      input: sum((row) => row.input),
      output: sum((row) => row.output),
      cache_write: sum((row) => row.cache_write),
      cache_read: sum((row) => row.cache_read),
      cost: unpriced ? null : sum((row) => row.cost ?? 0)
    }
  }
}

export interface MemoryText {
  /** The soul the agent speaks with: its own soul.md, else the host's, else the built-in persona. */
  readonly soul: string
  readonly summary: string
}

/**
 * An agent's soul and summary as they are on disk now, for reading (never a
 * link, never another user's file). Without a soul of its own, the host's
 * as its turns read it (`hostSoul`, the host's one reader: its limit, its
 * failures, the built-in persona when there is none).
 */
export const memoryOf = (directory: string, hostSoul: FallbackSoul.Reader): Result.Result<MemoryText, string> => {
  const read = (file: string) => Result.mapError(SafeFile.read(file), (error) => error.message)
  const own = read(path.join(directory, "soul.md"))
  if (Result.isFailure(own)) return Result.fail(own.failure)
  const summary = read(path.join(directory, "summary.md"))
  if (Result.isFailure(summary)) return Result.fail(summary.failure)
  return memoryTextOf(own.success, summary.success, hostSoul)
}

/** The soul and summary of an agent whose own soul and summary are these (absent: none), as `memoryOf` answers them. */
export const memoryTextOf = (
  own: string | null | undefined,
  summary: string | null | undefined,
  hostSoul: FallbackSoul.Reader
): Result.Result<MemoryText, string> => {
  const soul = own?.trim() ? Result.succeed(own) : Result.mapError(hostSoul(), (error) => error.message)
  return Result.map(soul, (text) => ({ soul: text, summary: summary ?? "" }))
}

/** What a host answers of its agents' records, each agent named by a raw id (refused as the host refuses it). */
export interface Records {
  /** A page of agent `id`'s history, newest first (historyPage). */
  readonly history: (id: string, page: { readonly before?: number | undefined; readonly limit: number }) => Effect.Effect<HistoryPage, HostError>
  /** Agent `id`'s usage ledger for a period, per day and model. */
  readonly usage: (id: string, period: Period) => Effect.Effect<UsageReport.Report, HostError>
  /** Agent `id`'s soul and summary, read-only. */
  readonly memory: (id: string) => Effect.Effect<MemoryText, HostError>
  /** Agent `id`'s schedule entries with their last and next runs (AgentSchedules). */
  readonly schedules: (id: string) => Effect.Effect<ScheduleList, HostError>
  /** Every agent's usage for a period, per agent and day. */
  readonly usageAll: (period: Period) => Effect.Effect<AllUsage, HostError>
}

/** The records of a host's agents: `existing` checks an id names an agent, `agentIds` lists them. */
export const forHost = (host: {
  readonly existing: (raw: string) => Effect.Effect<AgentId, HostError>
  readonly agentIds: Effect.Effect<ReadonlyArray<AgentId>, HostError>
  readonly directoryOf: (id: AgentId) => string
  readonly prices: PriceTable
  readonly hostSoul: FallbackSoul.Reader
}): Records => {
  const readOf = <A>(id: AgentId, read: Result.Result<A, string | HistoryRefused>) =>
    Result.match(read, {
      onFailure: (refused) => {
        const { reason, message } = typeof refused === "string" ? { reason: "unavailable" as const, message: refused } : refused
        return Effect.fail(new HostError({ reason, id, message: `agent ${id}: ${message}` }))
      },
      onSuccess: Effect.succeed
    })
  const inAgent = <A>(raw: string, read: (directory: string) => Result.Result<A, string | HistoryRefused>) =>
    Effect.flatMap(host.existing(raw), (id) => readOf(id, read(host.directoryOf(id))))
  return {
    history: (raw, page) => inAgent(raw, (directory) => historyPage(directory, page.before, page.limit)),
    usage: (raw, period) => inAgent(raw, (directory) => usageOf(directory, host.prices, period)),
    memory: (raw) => inAgent(raw, (directory) => memoryOf(directory, host.hostSoul)),
    schedules: (raw) =>
      Effect.flatMap(host.existing(raw), (id) =>
        Effect.mapError(schedulesOf(host.directoryOf(id)), (error) => new HostError({ reason: "unavailable", id, message: `agent ${id}: ${error.message}` }))),
    usageAll: (period) => Effect.flatMap(host.agentIds, (ids) => usageOfAll(ids, (id) => host.directoryOf(id as AgentId), host.prices, period))
  }
}
