/**
 * The compaction's side of memory in PostgreSQL (the FoldStore port the
 * Compactor uses, as FoldStore.ts is for files). A plan names the first
 * sequence number of the kept tail (`splitOffset`) and the history's epoch
 * (`inode`, bumped when an import replaces history). The commit is one
 * transaction: the folded rows go and the new summary comes together, or
 * nothing changes; lines appended while the brain was summarising are past
 * the split and stay.
 *
 * One compaction per agent at a time, across processes: a lease on the
 * agent's row (`compacting_by`, a token of its own), taken and given back
 * while holding the agent's compaction lock (SqlCompactionLocks), a
 * session-level advisory lock that PostgreSQL ends with the holder's
 * session. A process that dies holding the lease holds it no longer than
 * its session lives: the next compaction, wherever it runs, takes the lock
 * and the lease over. The commit checks, under the row's lock, that the
 * lease still carries its token: a holder whose lease was taken over (its
 * session ended while it folded, cut off from the database) commits
 * nothing. A lease with an end (`compacting_until`, written by earlier
 * versions, which knew no lock) is honoured until that end.
 */
import * as crypto from "node:crypto"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Semaphore from "effect/Semaphore"
import type * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { FoldPlan, FoldResult, FoldStoreService } from "../FoldStore.js"
import { CompactionBusy, MemoryError } from "../MemoryDir.js"
import { CompactionLocks } from "./SqlCompactionLocks.js"
import { jsonOf, storable } from "./SqlExactText.js"
import { type HistoryRow, lineOfRow } from "./SqlHistoryRows.js"
import { defaultRetry, resilient } from "./SqlResilience.js"

/** Rows read per query while streaming the lines to fold. */
export const PAGE_ROWS = 1000
/** Exchange keys kept after a compaction: enough for every exchange a crash can leave pending. */
export const EXCHANGES_KEPT = 1024

/** The pid a lease's token names (`<pid> <uuid>`), for the CompactionBusy a caller is told. */
const ownerPid = (token: string | null | undefined) => Number.parseInt(token ?? "0", 10) || 0

export const make = (
  agentId: string,
  options: { readonly retry?: Schedule.Schedule<unknown> | undefined } = {}
): Effect.Effect<FoldStoreService, never, SqlClient.SqlClient | CompactionLocks> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const retry = options.retry ?? defaultRetry
    const mutex = yield* Semaphore.make(1)
    const safely = (what: string) => resilient(`${what} (agent ${agentId})`, retry)

    const locks = yield* CompactionLocks
    // The token of the lease this store holds, while a compaction of it runs.
    const holding = yield* Ref.make(Option.none<string>())

    const owner = sql<{ readonly owner: string | null }>`SELECT compacting_by AS owner FROM planckclaw_agents
      WHERE agent_id = ${agentId}`.pipe(safely("reading who compacts"), Effect.map((rows) => ownerPid(rows[0]?.owner)))

    // Under the lock, a lease without an end is ours to take: whoever wrote it no longer holds the lock.
    const takeLease = (token: string) =>
      sql<{ readonly owner: string | null; readonly taken: boolean }>`
        WITH taken AS (
          UPDATE planckclaw_agents SET compacting_by = ${token}, compacting_until = NULL
            WHERE agent_id = ${agentId} AND (compacting_until IS NULL OR compacting_until < now())
            RETURNING agent_id)
        SELECT (SELECT compacting_by FROM planckclaw_agents WHERE agent_id = ${agentId}) AS owner,
               EXISTS (SELECT 1 FROM taken) AS taken`.pipe(safely("taking the compaction lease"))

    // One try: a lease left behind is taken over by the next holder of the lock.
    const giveLease = (token: string) =>
      sql`UPDATE planckclaw_agents SET compacting_by = NULL
        WHERE agent_id = ${agentId} AND compacting_by = ${token}`.pipe(Effect.ignore)

    const lease = Effect.gen(function*() {
      const locked = yield* locks.hold(agentId).pipe(safely("taking the compaction lock"))
      if (locked === "held here") return yield* new CompactionBusy({ ownerPid: process.pid })
      if (locked === "held elsewhere") return yield* Effect.flatMap(owner, (pid) => new CompactionBusy({ ownerPid: pid }))
      const token = `${process.pid} ${crypto.randomUUID()}`
      const rows = yield* Effect.acquireRelease(
        takeLease(token),
        (rows) => rows[0]?.taken === true ? giveLease(token) : Effect.void
      )
      if (rows[0]?.taken !== true) return yield* new CompactionBusy({ ownerPid: ownerPid(rows[0]?.owner) })
      yield* Effect.acquireRelease(Ref.set(holding, Option.some(token)), () => Ref.set(holding, Option.none()))
    })

    const exclusiveCompaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      mutex.withPermitsIfAvailable(1)(Effect.scoped(Effect.andThen(lease, effect))).pipe(
        Effect.flatMap((done) =>
          Option.isSome(done) ? Effect.succeed(done.value) : Effect.fail(new CompactionBusy({ ownerPid: process.pid }))
        )
      )

    const planFold = (keep: number) =>
      Effect.gen(function*() {
        const agents = yield* sql<{ readonly epoch: bigint }>`SELECT epoch FROM planckclaw_agents WHERE agent_id = ${agentId}`
        const epoch = Number(agents[0]?.epoch ?? 0)
        // The first kept row; with keep = 0, one past the last row.
        const split = keep === 0
          ? yield* sql<{ readonly seq: bigint }>`SELECT seq + 1 AS seq FROM planckclaw_history WHERE agent_id = ${agentId}
              ORDER BY seq DESC LIMIT 1`
          : yield* sql<{ readonly seq: bigint }>`SELECT seq FROM planckclaw_history WHERE agent_id = ${agentId}
              ORDER BY seq DESC OFFSET ${keep - 1} LIMIT 1`
        const first = split[0]
        if (first === undefined) return Option.none<FoldPlan>()
        const older = yield* sql<{ readonly older: boolean }>`SELECT EXISTS (SELECT 1 FROM planckclaw_history
          WHERE agent_id = ${agentId} AND seq < ${first.seq}) AS older`
        return older[0]?.older === true ? Option.some({ splitOffset: Number(first.seq), inode: epoch }) : Option.none<FoldPlan>()
      }).pipe(safely("planning compaction"))

    const page = (plan: FoldPlan, from: number) =>
      sql<HistoryRow & { readonly seq: bigint }>`SELECT seq, role, content, line FROM planckclaw_history
        WHERE agent_id = ${agentId} AND seq >= ${from} AND seq < ${plan.splitOffset}
        ORDER BY seq LIMIT ${PAGE_ROWS}`.pipe(safely("reading history to fold"))

    // Pages by sequence number: each query starts where the last ended, a backlog of any size in a small heap.
    const linesToFold = (plan: FoldPlan) =>
      Stream.paginate(0, (from) =>
        Effect.map(page(plan, from), (rows) => {
          const last = rows[rows.length - 1]
          return [
            rows.map(lineOfRow),
            rows.length < PAGE_ROWS || last === undefined ? Option.none<number>() : Option.some(Number(last.seq) + 1)
          ] as const
        }))

    const refused = (reason: "replaced" | "locked") =>
      new MemoryError(
        reason === "replaced"
          ? { reason, message: `the history of agent ${agentId} was replaced during compaction; nothing changed` }
          : {
            reason,
            message: `the compaction lease of agent ${agentId} was taken over by another process (this one's database ` +
              "session ended while it folded); nothing changed"
          }
      )

    const commitFold = (plan: FoldPlan, summary: string) => {
      const summaryText = summary.length === 0 || summary.endsWith("\n") ? summary : `${summary}\n`
      return Effect.flatMap(Ref.get(holding), (token) =>
        sql.withTransaction(Effect.gen(function*() {
          // The row's lock orders this commit and a takeover of the lease: one after the other, never together.
          const agents = yield* sql<{ readonly epoch: bigint; readonly compacting_by: string | null }>`SELECT epoch, compacting_by
            FROM planckclaw_agents WHERE agent_id = ${agentId} FOR UPDATE`
          if (Number(agents[0]?.epoch ?? -1) !== plan.inode) return Result.fail(refused("replaced"))
          if (Option.isNone(token) || agents[0]?.compacting_by !== token.value) return Result.fail(refused("locked"))
          yield* sql`DELETE FROM planckclaw_history WHERE agent_id = ${agentId} AND seq < ${plan.splitOffset}`
          // Exactly, a NUL included (a model can answer one): else every compaction would fail on it.
          yield* sql`UPDATE planckclaw_agents SET summary = ${storable(summaryText)}, summary_json = ${jsonOf(summaryText)}::text
            WHERE agent_id = ${agentId}`
          yield* sql`DELETE FROM planckclaw_exchanges WHERE agent_id = ${agentId} AND stored < (
            SELECT stored FROM planckclaw_exchanges WHERE agent_id = ${agentId}
            ORDER BY stored DESC OFFSET ${EXCHANGES_KEPT} LIMIT 1)`
          const kept = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM planckclaw_history
            WHERE agent_id = ${agentId}`
          const folded: Result.Result<FoldResult, MemoryError> = Result.succeed({
            kept: kept[0]?.n ?? 0,
            summaryBytes: Buffer.byteLength(summaryText, "utf8")
          })
          return folded
        })).pipe(safely("committing compaction"), Effect.flatMap(Effect.fromResult)))
    }

    // Its size is not known before the pages are read: always paged.
    const readLinesToFold = () => Effect.succeedNone

    return { exclusiveCompaction, planFold, readLinesToFold, linesToFold, commitFold } satisfies FoldStoreService
  })
