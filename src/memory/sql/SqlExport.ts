/**
 * `planckclaw memory export`: an agent's memory written from the database
 * into the files format (SqlTransfer.ts moves it the other way). Every read
 * sees one snapshot. Each file is written whole under a temporary name
 * beside its own (NAME.exporting) and synced; only then are they all
 * renamed into place, so a kill leaves temporaries that the next export
 * writes over, or (between two renames) a directory an import refuses.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layout from "../Layout.js"
import { MemoryError } from "../MemoryDir.js"
import { textOf } from "./SqlExactText.js"
import { type HistoryRow, lineOfRow } from "./SqlHistoryRows.js"
import { toMemoryError } from "./SqlResilience.js"
import * as SqlUsageLedger from "../../usage/SqlUsageLedger.js"

export const FILES = { history: "history.jsonl", summary: "summary.md", soul: "soul.md", usage: "usage.jsonl" } as const

/** The suffix of a file an export has not renamed into place yet. */
export const UNFINISHED = ".exporting"

/** Rows per INSERT on import and per SELECT on export. */
export const BATCH = 2000

export interface TransferReport {
  readonly lines: number
  readonly summary: boolean
  readonly soul: boolean
  readonly usage: number
  /** Usage lines left out on import: torn or not a usage line (an export writes none). */
  readonly usageSkipped?: number
}

export const ioError = (message: string, cause?: unknown) => new MemoryError({ reason: "io", message, cause })

const { O_CREAT, O_NOFOLLOW, O_TRUNC, O_WRONLY } = fs.constants

/**
 * Writes `file`'s temporary whole, from the texts `fill` hands `write` in
 * order, and syncs it: what a kill left there before is written over, never
 * through a link.
 */
const writeTemporary = (
  file: string,
  fill: (write: (text: string) => Effect.Effect<void, MemoryError>) => Effect.Effect<void, MemoryError>
): Effect.Effect<void, MemoryError> => {
  const failed = (error: unknown) => ioError(`cannot write ${file}: ${String(error)}`, error)
  return Effect.acquireUseRelease(
    Effect.try({ try: () => fs.openSync(`${file}${UNFINISHED}`, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0o600), catch: failed }),
    (fd) =>
      Effect.andThen(
        fill((text) => Effect.try({ try: () => void fs.writeSync(fd, text), catch: failed })),
        Effect.try({ try: () => fs.fsyncSync(fd), catch: failed })
      ),
    (fd) => Effect.sync(() => void Result.try(() => fs.closeSync(fd)))
  )
}

/**
 * Every read of an export sees one snapshot (a REPEATABLE READ transaction):
 * a compaction or a forget committing meanwhile, beside a live runner, is
 * either all in the export or not at all, never its old summary with its
 * folded lines already gone.
 */
export const exportAgent = (
  agentId: string,
  directory: string
): Effect.Effect<TransferReport, MemoryError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.andThen(
        sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`.pipe(Effect.mapError(toMemoryError(`exporting agent ${agentId}`))),
        exportFrom(sql, agentId, directory)
      )
    ).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(toMemoryError(`exporting agent ${agentId}`)(error))),
      // effect/sql turns a failed COMMIT (the connection died) into a defect.
      Effect.catchDefect((defect) =>
        defect instanceof SqlError ? Effect.fail(toMemoryError(`exporting agent ${agentId}`)(defect)) : Effect.die(defect))
    ))

const exportFrom = (
  sql: SqlClient.SqlClient,
  agentId: string,
  directory: string
): Effect.Effect<TransferReport, MemoryError> =>
  Effect.gen(function*() {
    const agents = yield* sql<{
      readonly summary: string | null
      readonly summary_json: string | null
      readonly soul: string | null
      readonly history_unterminated: boolean
    }>`SELECT summary, summary_json, soul, history_unterminated FROM planckclaw_agents WHERE agent_id = ${agentId}`.pipe(
      Effect.mapError(toMemoryError(`exporting agent ${agentId}`))
    )
    const agent = agents[0]
    if (agent === undefined) return yield* ioError(`agent ${agentId} has no memory in the database`)
    const present = Object.values(FILES).filter((name) => fs.existsSync(path.join(directory, name)))
    if (present.length > 0) {
      return yield* ioError(`${directory} already holds ${present.join(", ")}: export into an empty or new directory`)
    }
    yield* Effect.try({
      try: () => fs.mkdirSync(directory, { recursive: true, mode: 0o700 }),
      catch: (error) => ioError(`cannot create ${directory}: ${String(error)}`, error)
    })
    const written: Array<string> = []
    const write = (name: string, fill: Parameters<typeof writeTemporary>[1]) =>
      Effect.tap(writeTemporary(path.join(directory, name), fill), () => Effect.sync(() => written.push(name)))

    // Pages by sequence number (the primary key's order), so a long history is never all in memory.
    let lines = 0
    const wrote = Effect.gen(function*() {
      yield* write(FILES.history, (put) =>
        Effect.gen(function*() {
          let after = 0
          let first = true
          while (true) {
            const page = yield* sql<HistoryRow & { readonly seq: bigint }>`SELECT seq, role, content, line
              FROM planckclaw_history WHERE agent_id = ${agentId} AND seq > ${after} ORDER BY seq LIMIT ${BATCH}`.pipe(
              Effect.mapError(toMemoryError(`exporting agent ${agentId}`))
            )
            if (page.length === 0) break
            // Newline-separated; the last line is terminated unless the imported file's was not.
            yield* put((first ? "" : "\n") + page.map(lineOfRow).join("\n"))
            first = false
            lines += page.length
            after = Number(page[page.length - 1]!.seq)
          }
          if (lines > 0 && !agent.history_unterminated) yield* put("\n")
        }))
      const texts = [[FILES.summary, textOf(agent.summary, agent.summary_json)], [FILES.soul, agent.soul]] as const
      for (const [name, text] of texts) {
        if (text !== null) yield* write(name, (put) => put(text))
      }
      const usage = yield* SqlUsageLedger.read(sql, agentId).pipe(Effect.mapError(toMemoryError(`exporting agent ${agentId}`)))
      if (usage.length > 0) yield* write(FILES.usage, (put) => put(usage.map((line) => `${JSON.stringify(line)}\n`).join("")))
      // Every file whole on disk, then all renamed: history.jsonl last, so a kill between renames leaves a temporary.
      for (const name of written.slice(1).concat(written.slice(0, 1))) {
        const file = path.join(directory, name)
        yield* Effect.try({
          try: () => fs.renameSync(`${file}${UNFINISHED}`, file),
          catch: (error) => ioError(`cannot write ${file}: ${String(error)}`, error)
        })
      }
      // The renames are lasting before the command says the export is done.
      yield* Effect.try({ try: () => Layout.syncDirectory(directory), catch: (error) => ioError(`cannot sync ${directory}: ${String(error)}`, error) })
      return { lines, summary: agent.summary !== null, soul: agent.soul !== null, usage: usage.length }
    })
    // A failure leaves none of its temporaries (a kill leaves them, for the next export to write over).
    return yield* Effect.onError(wrote, () =>
      Effect.sync(() => {
        for (const name of written) Result.try(() => fs.rmSync(path.join(directory, `${name}${UNFINISHED}`), { force: true }))
      }))
  })
