/**
 * Schedules in the cluster (docs/schedules.md): each agent's entries are a
 * row of `planckclaw_schedules` (the document schedules.json would hold),
 * and one runner of the cluster fires them: effect/cluster's Singleton runs
 * the firing loop on exactly one runner at a time and moves it when that
 * runner goes. Two guards keep an occurrence from firing twice across a
 * hand-over: the occurrence is recorded under the row's lock (SELECT … FOR
 * UPDATE) before it is sent, and it is sent under an idempotency key of the
 * entry and occurrence, which the agent's entity answers once.
 *
 * Why not ClusterCron: its cron is fixed when its layer is built, one
 * entity per job; these entries are added and removed while the cluster
 * runs, each with its own cron, interval or time.
 */
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as FiberSet from "effect/FiberSet"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Singleton from "effect/cluster/Singleton"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as ScheduleDelivery from "../../schedule/ScheduleDelivery.js"
import * as ScheduleRunner from "../../schedule/ScheduleRunner.js"
import * as ScheduleStore from "../../schedule/ScheduleStore.js"
import * as AgentHost from "../serve/AgentHost.js"
import * as ScheduleDiscord from "../serve/ScheduleDiscord.js"

/** How often the table is looked at for agents with a schedule, and each row read again. */
export const POLL_MS = 2000

const EMPTY = ScheduleStore.encode([])

const where = (agent: string) => `planckclaw_schedules (agent ${agent})`

const failed = (agent: string) => (error: SqlError) =>
  new ScheduleStore.ScheduleError({ reason: "Io", message: `cannot use ${where(agent)}: ${error.message}` })

/** Agent `agent`'s schedule in the database: read whole, changed under its row's lock. */
export const sqlStore = (sql: SqlClient.SqlClient, agent: string): ScheduleStore.Store => {
  const decodeRow = (rows: ReadonlyArray<{ readonly entries: string }>) =>
    rows.length === 0 ? Result.succeed([]) : ScheduleStore.decode(where(agent), rows[0]!.entries)
  return {
    read: sql<{ entries: string }>`SELECT entries FROM planckclaw_schedules WHERE agent_id = ${agent}`.pipe(
      Effect.mapError(failed(agent)),
      Effect.flatMap((rows) => Effect.fromResult(decodeRow(rows)))
    ),
    modify: (change) =>
      sql.withTransaction(Effect.gen(function*() {
        // The row made first, so that there is a row to lock.
        yield* sql`INSERT INTO planckclaw_schedules (agent_id, entries) VALUES (${agent}, ${EMPTY}) ON CONFLICT (agent_id) DO NOTHING`
        const rows = yield* sql<{ entries: string }>`SELECT entries FROM planckclaw_schedules WHERE agent_id = ${agent} FOR UPDATE`
        const entries = yield* Effect.fromResult(decodeRow(rows))
        const changed = yield* Effect.fromResult(change(entries))
        if (changed.entries !== entries) {
          yield* sql`UPDATE planckclaw_schedules SET entries = ${ScheduleStore.encode(changed.entries)} WHERE agent_id = ${agent}`
        }
        return changed.value
      })).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(failed(agent)(error))))
  }
}

/** The firing loop: a runner per agent with a row, each firing sent through the host. */
const fireAll = (pollMs: number) =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const host = yield* AgentHost.AgentHost
    // Said once per runner that takes the singleton over: where the cluster's schedules fire now.
    yield* Effect.logInfo("the cluster's schedules fire on this runner")
    yield* Effect.addFinalizer(() => Effect.logInfo("the cluster's schedules no longer fire on this runner"))
    const graceMs = yield* Effect.orDie(ScheduleRunner.GraceConfig)
    // Discord channels get their replies over REST with the bot's token, when there is one (ScheduleDiscord).
    const discord = yield* ScheduleDiscord.make
    const runners = yield* FiberMap.make<string>()
    const turns = yield* FiberSet.make()
    const start = (agent: string) =>
      Effect.flatMap(
        ScheduleRunner.make({
          store: sqlStore(sql, agent),
          graceMs,
          pollMs,
          fire: (entry, occurrenceMs) =>
            FiberSet.run(turns, Effect.gen(function*() {
              const reply = yield* host.send(agent, {
                text: ScheduleDelivery.messageOf(entry),
                channel: `schedule/${entry.id}`,
                idempotencyKey: `schedule-${entry.id}-${occurrenceMs}`
              })
              yield* ScheduleDelivery.deliverTo({ agent, discord }, entry.id, entry.to, reply.reply)
            }).pipe(Effect.catch((error) => Effect.logError(`schedule ${entry.id} of agent ${agent}: ${error.message}`))), {
              startImmediately: true
            }).pipe(Effect.asVoid)
        }),
        (runner) => FiberMap.run(runners, agent, runner.run, { onlyIfMissing: true })
      )
    const look = sql<{ agent_id: string }>`SELECT agent_id FROM planckclaw_schedules`.pipe(
      Effect.flatMap((rows) => Effect.forEach(rows, (row) => start(row.agent_id), { discard: true })),
      Effect.catchTag("SqlError", (error) => Effect.logWarning(`schedules not read: ${error.message}`))
    )
    return yield* Effect.repeat(look, Schedule.spaced(pollMs)).pipe(Effect.andThen(Effect.never))
  }))

/** The cluster's schedules, fired on one runner at a time (a Singleton of the cluster). */
export const layer = (options: { readonly pollMs?: number } = {}) =>
  Singleton.make("planckclaw/schedules", fireAll(options.pollMs ?? POLL_MS))
