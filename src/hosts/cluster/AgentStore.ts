/**
 * Where an entity's agent keeps its memory: what the entity builds, per
 * agent, when it starts (its Memory and FoldStore, and its brain recording
 * usage, under the agent's settings; Agent.makeFromPorts builds the rest), and where listing and status read. `postgres` keeps every
 * agent in the database (SqlAgentMemory), so runners on different machines
 * share them.
 */
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { BrainService } from "../../ports/Brain.js"
import { BrainLabelConfig } from "../../config/BrainChoice.js"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { FoldStore } from "../../memory/FoldStore.js"
import { CompactionLocks, type CompactionLocksService } from "../../memory/sql/SqlCompactionLocks.js"
import { exactBytes } from "../../memory/sql/SqlExactText.js"
import { describe } from "../../memory/sql/SqlResilience.js"
import * as SqlAgentMemory from "./SqlAgentMemory.js"
import * as Memory from "../../memory/Memory.js"
import * as AgentId from "../serve/AgentId.js"
import * as AgentSchedules from "../serve/AgentSchedules.js"
import * as ClusterRecords from "./ClusterRecords.js"
import * as ClusterSchedules from "./ClusterSchedules.js"
import * as TurnReads from "./TurnReads.js"
import * as TurnWrites from "./TurnWrites.js"
import * as AgentStatus from "../serve/AgentStatus.js"
import { HostError } from "../serve/HostError.js"
import * as FallbackSoul from "../../memory/FallbackSoul.js"
import { AgentConfig as AgentConfigSettings, type AgentConfig } from "../../config/AgentConfig.js"
import { BUILT_IN, type PriceTable } from "../../usage/Prices.js"

export interface AgentParts {
  /** The agent's memory store: what Agent.makeFromPorts builds its agent and compactor on, with the inbox, brain and claws. */
  readonly memory: Context.Context<Memory.Memory | FoldStore>
  /** The brain the agent's turns call (the store may record usage through it). */
  readonly brain: BrainService
  /** The agent's settings (model, history sizes) over the host's. */
  readonly provider: ConfigProvider.ConfigProvider
  /** Those settings parsed, once for the store's agents: not again by each agent and its compactor. */
  readonly settings?: AgentConfig | undefined
  /** The price table, read once for the store's agents (ParsedPrices); absent: each agent reads PLANCKCLAW_PRICES. */
  readonly prices?: PriceTable | undefined
  /** What waits for a turn's exchange (TurnWrites), when the store writes them together. */
  readonly writes?: TurnWrites.TurnWrites
  /** The TurnJournal's lookup, when the store reads the turn's memory with it (TurnReads). */
  readonly lookup?: TurnReads.TurnReads["lookup"]
}

export interface AgentStoreService {
  /** Where the agents are, for the log and the API (never a password). */
  readonly where: string
  readonly open: (id: AgentId.AgentId, brain: BrainService) => Effect.Effect<AgentParts, HostError, Scope.Scope>
  readonly exists: (id: AgentId.AgentId) => Effect.Effect<boolean, HostError>
  readonly status: (id: AgentId.AgentId, running: boolean) => Effect.Effect<AgentStatus.AgentInfo, HostError>
  /** A page of the agents, each read as `status` reads one, in one query. */
  readonly page: (page: AgentStatus.ListPage, isRunning: (id: string) => boolean) => Effect.Effect<AgentStatus.AgentList, HostError>
  /** The agent's schedule with its last and next runs (its row of planckclaw_schedules); absent: the host answers 503. */
  readonly schedules?: (id: AgentId.AgentId) => Effect.Effect<AgentSchedules.ScheduleList, HostError>
  /** Its history pages, usage, soul and summary, read from the database (ClusterRecords); absent: the host answers 503. */
  readonly records?: ClusterRecords.ClusterRecords
}

export class AgentStore extends Context.Service<AgentStore, AgentStoreService>()("planckclaw/cluster/AgentStore") {}

const unavailable = (id: string, message: string) => new HostError({ reason: "unavailable", id, message: `agent ${id}: ${message}` })

// The driver's own words (a refused connection...): the SqlError's message is only that a statement failed.
const databaseError = (what: string) => (error: SqlError) =>
  new HostError({ reason: "unavailable", message: `${what}: the database did not answer: ${describe(error)}` })

/** The agents in PostgreSQL (the tables of SqlMigrations.ts), as `memory import` leaves them. */
export const postgres = (options: {
  readonly where: string
  readonly defaultSoulFile: string
  readonly provider: ConfigProvider.ConfigProvider
  /** The price table the usage routes price the ledgers with (PLANCKCLAW_PRICES over the built-in one); the built-in one by default. */
  readonly prices?: PriceTable | undefined
  readonly sql: SqlClient.SqlClient
  /** The runner's one session for compaction locks, shared by all its agents (SqlCompactionLocks). */
  readonly compactionLocks: CompactionLocksService
}): AgentStoreService => {
  const { sql } = options
  // Every agent of this store reads and compacts with the same sizes (the host's settings).
  const learnt = TurnWrites.sizes()
  // And the same host's soul, read by one reader for them all (its text kept once).
  const fallbackSoul = FallbackSoul.reader(options.defaultSoulFile)
  // And the same settings, parsed at the first agent's start.
  let settings: AgentConfig | undefined
  return {
    where: options.where,
    open: (id, brain) =>
      Effect.gen(function*() {
        const context = yield* Layer.build(
          SqlAgentMemory.memoryLayer(id, { fallbackSoul }).pipe(
            Layer.provide(Layer.mergeAll(
              Layer.succeed(SqlClient.SqlClient, sql),
              Layer.succeed(CompactionLocks, options.compactionLocks)
            ))
          )
        )
        const label = yield* BrainLabelConfig
        settings ??= yield* AgentConfigSettings
        // A turn's reply, usage and exchange go in one statement (TurnWrites); turns and compactions
        // alike answer through the brain recording usage.
        const writes = TurnWrites.make()
        // And what it reads, with the journal's question (TurnReads).
        const reads = TurnReads.make(sql, id, learnt, { fallbackSoul })
        const memory = reads.memory(TurnWrites.memory(Context.get(context, Memory.Memory), sql, id, writes, learnt))
        return {
          memory: Context.add(context, Memory.Memory, memory),
          provider: options.provider,
          settings,
          prices: options.prices,
          brain: TurnWrites.recordingBrain(brain, sql, id, label, writes),
          writes,
          lookup: reads.lookup
        }
      }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, options.provider),
        Effect.mapError((error) => unavailable(id, error._tag === "MemoryError" ? error.message : String(error)))
      ),
    exists: (id) =>
      sql<{ readonly found: number }>`SELECT 1 AS found FROM planckclaw_agents WHERE agent_id = ${id}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.mapError(databaseError(`agent ${id}`))
      ),
    status: (id, running) =>
      // The agent's row read once, joined to the one row asked for: an agent with history but no row still has a status.
      sql<StatusRow>`SELECT
          (SELECT count(*) FROM planckclaw_history h WHERE h.agent_id = wanted.id) AS lines,
          octet_length(a.summary) AS summary_bytes,
          CASE WHEN a.summary_json IS NULL THEN NULL ELSE a.summary END AS nul_summary, a.summary_json,
          (SELECT h.created FROM planckclaw_history h WHERE h.agent_id = wanted.id ORDER BY h.seq DESC LIMIT 1) AS last
        FROM (VALUES (${id}::text)) AS wanted (id) LEFT JOIN planckclaw_agents a ON a.agent_id = wanted.id`.pipe(
        Effect.map((rows) => statusOf(id, rows[0], running)),
        Effect.mapError(databaseError(`agent ${id}`))
      ),
    // Ordered byte by byte (COLLATE "C"), as the file host sorts its ids: a page's `after` means the same in both.
    // `search` as serve's: the ids holding the text as it is (strpos, not a LIKE pattern). A NUL, which a text
    // parameter cannot carry, is in no id: a search holding one finds none, and the ids after `x\0…` are those after `x`.
    page: ({ after, limit, search }, isRunning) =>
      search?.includes("\u0000") === true ? Effect.succeed({ agents: [], next: null }) : sql<StatusRow & { readonly agent_id: string }>`SELECT a.agent_id,
          (SELECT count(*) FROM planckclaw_history h WHERE h.agent_id = a.agent_id) AS lines,
          octet_length(a.summary) AS summary_bytes,
          CASE WHEN a.summary_json IS NULL THEN NULL ELSE a.summary END AS nul_summary, a.summary_json,
          (SELECT h.created FROM planckclaw_history h WHERE h.agent_id = a.agent_id ORDER BY h.seq DESC LIMIT 1) AS last
        FROM planckclaw_agents a
        WHERE a.agent_id COLLATE "C" > ${(after ?? "").split("\u0000")[0]!}
          ${search === undefined || search === "" ? sql`` : sql`AND strpos(a.agent_id, ${search}) > 0`}
        ORDER BY a.agent_id COLLATE "C"
        LIMIT ${limit + 1}`.pipe(
        Effect.map((rows): AgentStatus.AgentList => ({
          agents: rows.slice(0, limit).filter((row) => AgentId.is(row.agent_id)).map((row) =>
            statusOf(row.agent_id, row, isRunning(row.agent_id))
          ),
          next: rows.length > limit ? rows[limit - 1]!.agent_id : null
        })),
        Effect.mapError(databaseError("listing the agents"))
      ),
    schedules: (id) =>
      Effect.mapError(AgentSchedules.listOf(ClusterSchedules.sqlStore(sql, id)), (error) => unavailable(id, error.message)),
    records: ClusterRecords.make({ sql, prices: options.prices ?? BUILT_IN, hostSoul: fallbackSoul })
  }
}

interface StatusRow {
  readonly lines: bigint
  readonly summary_bytes: number | null
  /** The summary, only when it holds a NUL (its JSON is there): most rows bring no text. */
  readonly nul_summary: string | null
  readonly summary_json: string | null
  readonly last: Date | null
}

const statusOf = (id: string, row: StatusRow | undefined, running: boolean): AgentStatus.AgentInfo => ({
  id,
  historyLines: Number(row?.lines ?? 0),
  // The summary's size as summary.md would have it (a NUL counted as itself, not as U+FFFD).
  summaryBytes: row === undefined ? 0 : exactBytes(row.summary_bytes, row.nul_summary, row.summary_json),
  lastMessageAt: row?.last ? new Date(row.last).toISOString() : null,
  state: running ? "running" : "released"
})
