/** What the host tells about an agent, read from its directory without starting it. */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { textOf } from "../../config/ConfigRange.js"
import { AgentsDir } from "../../config/settings/Serve.js"
import { nextTurn } from "../../runtime/process/NextTurn.js"
import type { PriceTable } from "../../usage/Prices.js"
import * as UsageLedger from "../../usage/UsageLedger.js"
import * as UsageReport from "../../usage/UsageReport.js"
import * as AgentId from "./AgentId.js"
import { HostError } from "./HostError.js"
import type { AgentInfo } from "./WireShapes.js"

// What the API says of an agent: one type for the server and the web console (WireShapes).
export type { AgentInfo }

/**
 * Counts newlines in chunks of `buffer`, plus a last line without one: memory
 * stays flat with a large history.
 */
const countLines = (file: string, buffer: Buffer): number => {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  try {
    let lines = 0
    let last = 0x0a
    for (let read = fs.readSync(fd, buffer); read > 0; read = fs.readSync(fd, buffer)) {
      for (let index = 0; index < read; index++) if (buffer[index] === 0x0a) lines++
      last = buffer[read - 1]!
    }
    return last === 0x0a ? lines : lines + 1
  } finally {
    fs.closeSync(fd)
  }
}

const stat = (file: string) => Result.getOrUndefined(Result.try(() => fs.lstatSync(file, { throwIfNoEntry: false })))

/** Today's figures of an agent's ledger, read from its end back to today's first line. */
export const todayOf = (directory: string, prices: PriceTable, now = new Date()): NonNullable<AgentInfo["today"]> => {
  const day = now.toISOString().slice(0, 10)
  const { total } = UsageReport.report(UsageLedger.readSinceDay(path.join(directory, UsageLedger.FILE_NAME), day), 0, prices, day)
  return { tokens: total.input + total.output + total.cache_write + total.cache_read, cost: total.unpriced.length > 0 ? null : total.cost }
}

const readWith = (buffer: Buffer, id: string, directory: string, running: boolean, prices?: PriceTable): AgentInfo => {
  const history = path.join(directory, "history.jsonl")
  const historyStat = stat(history)
  const times = [historyStat, stat(path.join(directory, ".inbox.jsonl"))].flatMap((s) => s?.isFile() === true ? [s.mtimeMs] : [])
  return {
    id,
    historyLines: historyStat?.isFile() === true ? Result.getOrElse(Result.try(() => countLines(history, buffer)), () => 0) : 0,
    summaryBytes: stat(path.join(directory, "summary.md"))?.size ?? 0,
    lastMessageAt: times.length === 0 ? null : new Date(Math.max(...times)).toISOString(),
    state: running ? "running" : "released",
    ...(prices === undefined ? {} : { today: todayOf(directory, prices) })
  }
}

/** The agent directory's status (lstat: a link is not one), undefined when there is no directory there. */
export const directoryStatus = (directory: string): fs.Stats | undefined => {
  const found = stat(directory)
  return found?.isDirectory() === true ? found : undefined
}

/** Whether `directory` is a real directory (not a link), and so may be an agent. */
export const isAgentDirectory = (directory: string): boolean => directoryStatus(directory) !== undefined

/**
 * Agent `raw`'s directory under PLANCKCLAW_AGENTS_DIR, as `serve` keeps it
 * (the commands' `--agent ID`); refused when the id is not one or no such
 * agent exists.
 */
export const existingAgent = (raw: string) =>
  Effect.gen(function*() {
    const id = yield* Effect.fromResult(AgentId.parse(raw))
    const directory = path.join(path.resolve(yield* textOf(AgentsDir)), id)
    if (!isAgentDirectory(directory)) {
      return yield* new HostError({ reason: "not-found", id, message: `no agent ${id}: ${directory} is not a directory` })
    }
    return { id, directory }
  })

const uid = process.getuid?.()

/**
 * Why users other than this one could change what is in `directory` (its
 * group or other write bit, or another user owning it), and what to do, in
 * words for a warning; `undefined` when only this user can, or it cannot be read.
 */
export const writableByOthers = (
  directory: string,
  found: fs.Stats | undefined = stat(directory)
): { readonly problem: string; readonly fix: string } | undefined => {
  if (found === undefined) return undefined
  if (uid !== undefined && found.uid !== uid) {
    return { problem: `is owned by uid ${found.uid}, not by this user (uid ${uid})`, fix: "use a directory of your own" }
  }
  const mode = (found.mode & 0o7777).toString(8).padStart(4, "0")
  return (found.mode & 0o022) !== 0
    ? { problem: `can be written by other users (mode ${mode})`, fix: `chmod 700 ${directory}` }
    : undefined
}

/**
 * A warning when users other than this one could change what is in
 * `directory`: they could rewrite `whose` memory (soul, history) or plant
 * files there. `what` names the directory.
 */
export const warnIfOthersCanWrite = (what: string, directory: string, whose: string, found?: fs.Stats): Effect.Effect<void> =>
  Effect.suspend(() => {
    const loose = writableByOthers(directory, found)
    return loose === undefined
      ? Effect.void
      : Effect.logWarning(`${what} ${loose.problem}: they could change ${whose} memory; ${loose.fix}`)
  })

/** Whether the agent left messages unanswered (its inbox journal is not empty). */
export const hasUnanswered = (directory: string): boolean => (stat(path.join(directory, ".inbox.jsonl"))?.size ?? 0) > 0

/** Agents read per step of a listing or a scan: a step holds the event loop a few milliseconds at most. */
const agentsPerStep = 32

/** `each` on `items`, `agentsPerStep` at a time, with a turn of the event loop between steps. */
const inSteps = <A, B, E>(
  items: ReadonlyArray<A>,
  each: (step: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>
): Effect.Effect<Array<B>, E> =>
  Effect.gen(function*() {
    const results: Array<B> = []
    for (let start = 0; start < items.length; start += agentsPerStep) {
      if (start > 0) yield* nextTurn
      results.push(...(yield* each(items.slice(start, start + agentsPerStep))))
    }
    return results
  })

/** A page of a listing: the agents after `after` in id order (as JavaScript sorts strings), at most `limit`. */
export interface ListPage {
  readonly after?: string | undefined
  readonly limit: number
  /** Only the agents whose id holds this text. */
  readonly search?: string | undefined
}

/** Agents in a page: at most this many. */
export const PAGE_LIMIT_MAX = 1000
/** Agents in a page when the caller does not say. */
export const PAGE_LIMIT_DEFAULT = 100

export interface AgentList {
  readonly agents: ReadonlyArray<AgentInfo>
  /** The `after` of the next page; null when this page is the last. */
  readonly next: string | null
}

/** What a host reads its agents' status with (`makeReader`, one per host). */
export interface StatusReader {
  /** An agent's status, read from its directory. */
  readonly read: (id: string, directory: string, running: boolean) => AgentInfo
  /**
   * A page of the agents among `sortedIds` (those whose directory is a real
   * directory), each read as `read` does, a step at a time: a listing reads
   * every agent's history to count its lines (some 55 µs an agent with a
   * short one), and 10,000 agents read in one go held every other agent's
   * turn for half a second.
   */
  readonly readPage: <Id extends string>(
    sortedIds: ReadonlyArray<Id>,
    page: ListPage,
    directoryOf: (id: Id) => string,
    isRunning: (id: Id) => boolean
  ) => Effect.Effect<AgentList>
}

/**
 * A host's reader, with the one buffer every count of its histories uses:
 * counting is synchronous, so no two use it at once, and a listing of
 * thousands of agents allocates none.
 */
export const makeReader = (prices?: PriceTable): StatusReader => {
  let chunk: Buffer | undefined
  const read = (id: string, directory: string, running: boolean): AgentInfo =>
    readWith(chunk ??= Buffer.allocUnsafe(64 * 1024), id, directory, running, prices)
  return { read, readPage: (sortedIds, page, directoryOf, isRunning) => readPage(read, sortedIds, page, directoryOf, isRunning) }
}

const readPage = <Id extends string>(
  read: StatusReader["read"],
  sortedIds: ReadonlyArray<Id>,
  page: ListPage,
  directoryOf: (id: Id) => string,
  isRunning: (id: Id) => boolean
): Effect.Effect<AgentList> =>
  Effect.gen(function*() {
    const after = page.after
    const search = page.search
    const ids = search === undefined || search === "" ? sortedIds : sortedIds.filter((id) => id.includes(search))
    let index = after === undefined ? 0 : ids.findIndex((id) => id > after)
    if (index < 0) index = ids.length
    const agents: Array<AgentInfo> = []
    for (let looked = 0; index < ids.length && agents.length < page.limit; index++, looked++) {
      if (looked > 0 && looked % agentsPerStep === 0) yield* nextTurn
      const id = ids[index]!
      const directory = directoryOf(id)
      if (isAgentDirectory(directory)) agents.push(read(id, directory, isRunning(id)))
    }
    return { agents, next: index < ids.length ? ids[index - 1]! : null }
  })

/**
 * Runs `found` on each agent among `ids` that left messages unanswered, as
 * it is found, a step at a time: one `lstat` an agent, which for 100,000
 * agents (or a cold disk) is seconds that no other agent should wait for.
 * Gives how many were found.
 */
export const forEachUnanswered = <Id extends string, E>(
  ids: ReadonlyArray<Id>,
  directoryOf: (id: Id) => string,
  found: (id: Id) => Effect.Effect<void, E>
): Effect.Effect<number, E> =>
  Effect.map(
    inSteps(ids, (step) => {
      const left = step.filter((id) => hasUnanswered(directoryOf(id)))
      return Effect.as(Effect.forEach(left, found, { discard: true }), left)
    }),
    (left) => left.length
  )
