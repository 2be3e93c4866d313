/**
 * `planckclaw usage`: the ledger (usage.jsonl) summed per day (UTC) and
 * model, with an estimated cost from the price table and the share of
 * input tokens served from the prompt cache. Pure: reading the file and
 * the prices is the command's.
 */
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import type { UsageLine } from "./UsageLedger.js"
import { type PriceTable, priceOf } from "./Prices.js"

/** `--since` is not a date in YYYY-MM-DD form. */
export class UsageSinceError extends Data.TaggedError("UsageSinceError")<{
  readonly reason: "invalid"
  readonly message: string
}> {}

/** Whether `value` is a real calendar date as YYYY-MM-DD. */
export const isDay = (value: string): boolean => {
  const date = new Date(`${value}T00:00:00Z`)
  return /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value)
}

/** The day `--since` (or `name`) names, checked to be a real calendar date. */
export const parseSince = (value: string, name = "--since"): Result.Result<string, UsageSinceError> =>
  isDay(value) ? Result.succeed(value) : Result.fail(
    new UsageSinceError({ reason: "invalid", message: `${name} ${JSON.stringify(value)}: expected a date as YYYY-MM-DD` })
  )

/** Why a period from `since` to `until` (days, both included) is refused: it ends before it begins. */
export const periodProblem = (since: string | undefined, until: string | undefined, names = { since: "--since", until: "--until" }): string | undefined =>
  since !== undefined && until !== undefined && since > until
    ? `${names.since} ${since} is after ${names.until} ${until}: the period would be empty (both days are included)`
    : undefined

export interface Totals {
  readonly requests: number
  readonly input: number
  readonly output: number
  readonly cache_write: number
  readonly cache_read: number
  /** Estimated US dollars; null when some model has no price. */
  readonly cost: number | null
}

export interface Row extends Totals {
  readonly day: string
  readonly model: string
}

export interface Report {
  readonly since: string | null
  readonly rows: ReadonlyArray<Row>
  readonly total: Totals & { readonly cache_share: number; readonly unpriced: ReadonlyArray<string> }
  /** Ledger lines skipped (torn by a crash, or not ledger lines). */
  readonly skipped: number
}

const costOf = (table: PriceTable, model: string, t: Omit<Totals, "cost" | "requests">): number | null => {
  const price = priceOf(table, model)
  return price === undefined ? null : (t.input * price.input + t.output * price.output +
    t.cache_write * price.cache_write + t.cache_read * price.cache_read) / 1_000_000
}

/** One day's and model's sums, before pricing: what `report` groups a ledger into (the cluster's SQL groups its rows alike). */
export interface Group {
  readonly day: string
  readonly model: string
  readonly requests: number
  readonly input: number
  readonly output: number
  readonly cache_write: number
  readonly cache_read: number
}

/** The ledger's lines of the period (days of `at`, UTC, both ends included) summed per day and model. */
export const groups = (lines: ReadonlyArray<UsageLine>, since: string | undefined, until: string | undefined): Array<Group> => {
  const byKey = new Map<string, { day: string; model: string; requests: number; input: number; output: number; cache_write: number; cache_read: number }>()
  for (const line of lines) {
    const day = line.at.slice(0, 10)
    if ((since !== undefined && day < since) || (until !== undefined && day > until)) continue
    const key = `${day}\u0000${line.model}`
    const group = byKey.get(key) ?? { day, model: line.model, requests: 0, input: 0, output: 0, cache_write: 0, cache_read: 0 }
    group.requests++
    group.input += line.input
    group.output += line.output
    group.cache_write += line.cache_write
    group.cache_read += line.cache_read
    byKey.set(key, group)
  }
  return [...byKey.values()]
}

/** The report of a period's groups (any order: sorted by day, then model), priced from `table`. */
export const reportOfGroups = (
  grouped: ReadonlyArray<Group>,
  skipped: number,
  table: PriceTable,
  since: string | undefined
): Report => {
  const rows = [...grouped]
    .sort((a, b) => a.day < b.day ? -1 : a.day > b.day ? 1 : a.model < b.model ? -1 : a.model > b.model ? 1 : 0)
    .map((group): Row => ({ ...group, cost: costOf(table, group.model, group) }))
  const sum = (pick: (row: Row) => number) => rows.reduce((total, row) => total + pick(row), 0)
  const input = sum((r) => r.input)
  const cacheWrite = sum((r) => r.cache_write)
  const cacheRead = sum((r) => r.cache_read)
  const allInput = input + cacheWrite + cacheRead
  const unpriced = [...new Set(rows.filter((row) => row.cost === null).map((row) => row.model))].sort()
  return {
    since: since ?? null,
    rows,
    total: {
      requests: sum((r) => r.requests),
      input,
      output: sum((r) => r.output),
      cache_write: cacheWrite,
      cache_read: cacheRead,
      cost: sum((r) => r.cost ?? 0),
      cache_share: allInput === 0 ? 0 : cacheRead / allInput,
      unpriced
    },
    skipped
  }
}

export const report = (
  lines: ReadonlyArray<UsageLine>,
  skipped: number,
  table: PriceTable,
  since: string | undefined,
  until?: string | undefined
): Report => reportOfGroups(groups(lines, since, until), skipped, table, since)

const dollars = (cost: number | null): string => cost === null ? "no price" : `$${cost.toFixed(4)}`

/** The report as a table for people. */
export const render = (r: Report): string => {
  if (r.rows.length === 0) {
    return r.since === null ? "No usage recorded yet." : `No usage recorded since ${r.since}.`
  }
  const header = ["day", "model", "requests", "input", "output", "cache write", "cache read", "cost"]
  const body = r.rows.map((row) => [
    row.day,
    row.model,
    ...[row.requests, row.input, row.output, row.cache_write, row.cache_read].map(String),
    dollars(row.cost)
  ])
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((cells) => cells[column]!.length)))
  const format = (cells: ReadonlyArray<string>) =>
    cells.map((cell, column) => column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join("  ").trimEnd()
  const t = r.total
  return [
    format(header),
    ...body.map(format),
    "",
    `Total: ${t.requests} request${t.requests === 1 ? "" : "s"}, ${t.input + t.cache_write + t.cache_read} input tokens ` +
    `(${(t.cache_share * 100).toFixed(1)}% read from the prompt cache), ${t.output} output tokens, ` +
    `estimated ${dollars(t.cost)}${t.unpriced.length > 0 ? ` (no price for ${t.unpriced.join(", ")})` : ""}.`,
    ...(r.skipped > 0 ? [`Skipped ${r.skipped} unreadable ledger line${r.skipped === 1 ? "" : "s"}.`] : [])
  ].join("\n")
}

/** One agent's usage on one day, all models together. */
export interface AgentDay extends Totals {
  readonly agent: string
  readonly day: string
}

/** An agent's report folded per day (its models summed; cost null when some model of the day has no price). */
export const perDay = (agent: string, r: Report): Array<AgentDay> => {
  const days = new Map<string, AgentDay>()
  for (const row of r.rows) {
    const before = days.get(row.day)
    days.set(row.day, before === undefined
      ? { agent, day: row.day, requests: row.requests, input: row.input, output: row.output, cache_write: row.cache_write, cache_read: row.cache_read, cost: row.cost }
      : {
        agent,
        day: row.day,
        requests: before.requests + row.requests,
        input: before.input + row.input,
        output: before.output + row.output,
        cache_write: before.cache_write + row.cache_write,
        cache_read: before.cache_read + row.cache_read,
        cost: before.cost === null || row.cost === null ? null : before.cost + row.cost
      })
  }
  return [...days.values()]
}
