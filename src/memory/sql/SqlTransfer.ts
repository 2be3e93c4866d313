/**
 * Moves an agent between the files format (the original's history.jsonl
 * and summary.md, with soul.md and usage.jsonl when present) and the
 * database, exactly: history.jsonl, summary.md and soul.md come back byte
 * for byte (lines that are not entries, odd spacing or escapes, a missing
 * final newline included; a NUL in summary.md too, SqlExactText.ts).
 * usage.jsonl moves its well-formed lines (a NUL in a brain or model name
 * as U+FFFD: SqlUsageLedger.storableLine).
 *
 * An import is one transaction: the agent's memory in the database is all
 * of the files or unchanged. It refuses to overwrite memory already there
 * unless asked to replace it (which bumps the history's epoch, so a
 * compaction planned before cannot commit). It refuses a directory an
 * export did not finish writing (SqlExport.ts).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as SqlClient from "effect/sql/SqlClient"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { replayEntries } from "../InboxJournal.js"
import * as Layout from "../Layout.js"
import type { MemoryError } from "../MemoryDir.js"
import { describeError, errnoCode } from "../../runtime/Errors.js"
import * as SafeFile from "../../runtime/SafeFile.js"
import * as UsageLedger from "../../usage/UsageLedger.js"
import { holdsNul, jsonOf, storable } from "./SqlExactText.js"
import { BATCH, FILES, ioError, type TransferReport, UNFINISHED } from "./SqlExport.js"
import { rowOfLine } from "./SqlHistoryRows.js"
import * as SqlMemory from "./SqlMemory.js"
import { resilient } from "./SqlResilience.js"
import * as SqlUsageLedger from "../../usage/SqlUsageLedger.js"

export { exportAgent, FILES, type TransferReport } from "./SqlExport.js"

/**
 * The most an import reads of one file: each is read whole, and a history
 * this long is better compacted first (PostgreSQL or not, a turn reads its
 * tail only).
 */
export const MAX_IMPORT_BYTES = 256 * 1024 * 1024

const { O_NOFOLLOW, O_NONBLOCK, O_RDONLY } = fs.constants

const readIfPresent = (file: string): Result.Result<string | undefined, MemoryError> => {
  const refuse = (why: string, cause?: unknown) => Result.fail(ioError(`cannot import ${file}: ${why}`, cause))
  // Never through a link, never blocking on a FIFO: what is imported is the file in the directory.
  const opened = Result.try(() => fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK))
  if (Result.isFailure(opened)) {
    const code = errnoCode(opened.failure)
    if (code === "ENOENT") return Result.succeed(undefined)
    return code === "ELOOP"
      ? refuse("it is a symbolic link; refusing to follow it (put a copy of the file it points to in its place)")
      : refuse(describeError(opened.failure), opened.failure)
  }
  const fd = opened.success
  const bytes = Result.try(() => {
    try {
      const stat = fs.fstatSync(fd)
      if (!stat.isFile()) return "it is not a regular file"
      if (stat.size > MAX_IMPORT_BYTES) {
        return `it holds ${stat.size} bytes, over the ${MAX_IMPORT_BYTES / 1024 / 1024} MiB an import reads (compact the agent's memory first)`
      }
      return SafeFile.readUpTo(fd, stat.size)
    } finally {
      fs.closeSync(fd)
    }
  })
  if (Result.isFailure(bytes)) return refuse(describeError(bytes.failure), bytes.failure)
  if (typeof bytes.success === "string") return refuse(bytes.success)
  const text = bytes.success.toString("utf8")
  // Byte for byte or not at all: a file that is not UTF-8 would come back changed.
  if (!Buffer.from(text, "utf8").equals(bytes.success)) return refuse("it is not valid UTF-8")
  // history.jsonl's lines and summary.md are kept exactly, a NUL included (SqlHistoryRows, SqlExactText).
  if (holdsNul(text) && file.endsWith(FILES.soul)) return refuse("it holds a NUL byte, which PostgreSQL text cannot store")
  return Result.succeed(text)
}

/** The lines of a history.jsonl text and whether its last line lacks a newline. */
export const splitHistory = (text: string): { readonly lines: Array<string>; readonly unterminated: boolean } => {
  if (text.length === 0) return { lines: [], unterminated: false }
  const unterminated = !text.endsWith("\n")
  return { lines: (unterminated ? text : text.slice(0, -1)).split("\n"), unterminated }
}

export const importAgent = (
  agentId: string,
  directory: string,
  options: { readonly replace?: boolean; readonly retry?: Schedule.Schedule<unknown> } = {}
): Effect.Effect<TransferReport, MemoryError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // A kill between an export's renames leaves some files in place and the others beside: not a whole memory.
    const unfinished = Object.values(FILES).map((name) => `${name}${UNFINISHED}`).filter((name) =>
      Result.getOrElse(Result.try(() => fs.lstatSync(path.join(directory, name), { throwIfNoEntry: false }) !== undefined), () => false)
    )
    if (unfinished.length > 0) {
      return yield* ioError(
        `cannot import ${directory}: an export into it did not finish (${unfinished.join(", ")} ${unfinished.length === 1 ? "is" : "are"} left); ` +
          "export again into a new directory"
      )
    }
    // Messages a run accepted and did not finish are answered (and stored) by that directory's next run, never by the database's.
    const inbox = Layout.files(directory).inbox
    const journal = yield* Effect.fromResult(Result.mapError(SafeFile.read(inbox), (error) => ioError(`cannot import ${directory}: ${error.message}`, error)))
    const unfinishedMessages = journal === undefined ? 0 : replayEntries(journal).size
    if (unfinishedMessages > 0) {
      return yield* ioError(
        `cannot import ${directory}: its inbox journal (${path.basename(inbox)}) holds ${unfinishedMessages} message(s) a run accepted ` +
          "and did not finish (not answered yet, or answered and not yet in history); start planckclaw run on it once, " +
          "stop it when they are answered, then import"
      )
    }
    const history = yield* Effect.fromResult(readIfPresent(path.join(directory, FILES.history)))
    const summary = yield* Effect.fromResult(readIfPresent(path.join(directory, FILES.summary)))
    const soul = yield* Effect.fromResult(readIfPresent(path.join(directory, FILES.soul)))
    if (history === undefined && summary === undefined) {
      return yield* ioError(`nothing to import: ${directory} has neither ${FILES.history} nor ${FILES.summary}`)
    }
    const { lines, unterminated } = splitHistory(history ?? "")
    const rows: Array<Record<string, string | number | null>> = []
    for (const [index, line] of lines.entries()) {
      const row = rowOfLine(line)
      if (Option.isNone(row)) {
        return yield* ioError(`cannot import line ${index + 1} of ${FILES.history}: it holds a NUL byte, which PostgreSQL text cannot store`)
      }
      rows.push({ agent_id: agentId, seq: index + 1, ...row.value })
    }
    const usage = yield* Effect.fromResult(Result.mapError(
      UsageLedger.read(path.join(directory, FILES.usage)),
      (error) => ioError(`cannot import ${FILES.usage}: ${error.message}`, error)
    ))

    yield* sql.withTransaction(Effect.gen(function*() {
      // The agent's row locked first, as an append locks it (SqlMemory.allocate): an exchange committing
      // meanwhile is seen below, and refused rather than deleted; one coming after waits for the import.
      yield* SqlMemory.ensureAgent(sql, agentId)
      yield* sql`SELECT 1 FROM planckclaw_agents WHERE agent_id = ${agentId} FOR UPDATE`
      const existing: ReadonlyArray<{ readonly lines: number; readonly summary: string | null }> = yield* sql<{ readonly lines: number; readonly summary: string | null }>`
        SELECT (SELECT count(*)::int FROM (SELECT 1 FROM planckclaw_history WHERE agent_id = ${agentId} LIMIT 1) AS found) AS lines,
               (SELECT summary FROM planckclaw_agents WHERE agent_id = ${agentId}) AS summary`
      const held = existing[0]
      if (options.replace !== true && held !== undefined && (held.lines > 0 || held.summary !== null)) {
        return yield* ioError(
          `agent ${agentId} already has memory in the database; export it first, or import with --replace to overwrite it`
        )
      }
      yield* sql`INSERT INTO planckclaw_agents (agent_id, summary, summary_json, soul, history_unterminated, next_seq)
        VALUES (${agentId}, ${summary === undefined ? null : storable(summary)}, ${jsonOf(summary)}::text, ${soul ?? null},
          ${unterminated}, ${rows.length + 1})
        ON CONFLICT (agent_id) DO UPDATE SET summary = excluded.summary, summary_json = excluded.summary_json, soul = excluded.soul,
          history_unterminated = excluded.history_unterminated, next_seq = excluded.next_seq,
          epoch = planckclaw_agents.epoch + 1`
      yield* sql`DELETE FROM planckclaw_history WHERE agent_id = ${agentId}`
      yield* sql`DELETE FROM planckclaw_usage WHERE agent_id = ${agentId}`
      for (let start = 0; start < rows.length; start += BATCH) {
        const batch = rows.slice(start, start + BATCH)
        if (Arr.isArrayNonEmpty(batch)) yield* sql`INSERT INTO planckclaw_history ${sql.insert(batch)}`
      }
      for (let start = 0; start < usage.lines.length; start += BATCH) {
        yield* SqlUsageLedger.insert(sql, agentId, usage.lines.slice(start, start + BATCH))
      }
    })).pipe(resilient(`importing agent ${agentId}`, options.retry ?? Schedule.recurs(0)))
    return { lines: rows.length, summary: summary !== undefined, soul: soul !== undefined, usage: usage.lines.length, usageSkipped: usage.skipped }
  })
