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
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Result from "effect/Result"
import * as Singleton from "effect/cluster/Singleton"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { numberOf } from "../../config/ConfigRange.js"
import { MaxMessageBytes } from "../../config/settings/Agent.js"
import { describe } from "../../memory/sql/SqlResilience.js"
import * as ScheduleDelivery from "../../schedule/ScheduleDelivery.js"
import { sizeProblem } from "../../schedule/ScheduleEntry.js"
import * as ScheduleRunner from "../../schedule/ScheduleRunner.js"
import * as ScheduleStore from "../../schedule/ScheduleStore.js"
import * as AgentHost from "../serve/AgentHost.js"
import * as ScheduleDiscord from "../serve/ScheduleDiscord.js"

/** How often the table is read again (one query for every agent's entries). */
export const POLL_MS = 2000

const EMPTY = ScheduleStore.encode([])

const where = (agent: string) => `planckclaw_schedules (agent ${agent})`

const failed = (agent: string) => (error: SqlError) =>
  new ScheduleStore.ScheduleError({ reason: "Io", message: `cannot use ${where(agent)}: ${describe(error)}` })

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

/** An entry of agent `agent` as the cluster's one runner knows it: `AGENT/ID`. */
const SEPARATOR = "/"
const split = (key: string) => {
  const at = key.indexOf(SEPARATOR)
  return { agent: key.slice(0, at), id: key.slice(at + 1) }
}

/**
 * Every agent's entries as one runner's: read in one query (a row that does
 * not decode is said, once per reason, and skipped: the other agents' fire),
 * and a firing recorded in its agent's row, under that row's lock.
 */
const everyAgent = (sql: SqlClient.SqlClient): ScheduleRunner.RunnerStore => {
  const said = new Map<string, string>()
  return {
    read: sql<{ agent_id: string; entries: string }>`SELECT agent_id, entries FROM planckclaw_schedules`.pipe(
      Effect.mapError(failed("*")),
      Effect.flatMap((rows) =>
        Effect.map(
          Effect.forEach(rows, (row) => {
            const decoded = ScheduleStore.decode(where(row.agent_id), row.entries)
            if (Result.isSuccess(decoded)) {
              said.delete(row.agent_id)
              return Effect.succeed(decoded.success.map((entry) => ({ ...entry, id: `${row.agent_id}${SEPARATOR}${entry.id}` })))
            }
            if (said.get(row.agent_id) === decoded.failure.message) return Effect.succeed([])
            said.set(row.agent_id, decoded.failure.message)
            return Effect.as(Effect.logError(`schedule not fired: ${decoded.failure.message}`), [])
          }),
          (all) => all.flat()
        ))
    ),
    markRun: (key, occurrenceMs) => {
      const { agent, id } = split(key)
      return sqlStore(sql, agent).modify(ScheduleStore.markingRun(id, occurrenceMs))
    },
    rewind: (key, nowMs) => {
      const { agent, id } = split(key)
      return sqlStore(sql, agent).modify(ScheduleStore.rewinding(id, nowMs))
    }
  }
}

/** The firing loop: every agent's entries in one runner, each firing sent through the host. */
const fireAll = (pollMs: number) =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const host = yield* AgentHost.AgentHost
    // Said once per runner that takes the singleton over: where the cluster's schedules fire now.
    yield* Effect.logInfo("the cluster's schedules fire on this runner")
    yield* Effect.addFinalizer(() => Effect.logInfo("the cluster's schedules no longer fire on this runner"))
    const graceMs = yield* Effect.orDie(ScheduleRunner.GraceConfig)
    // This runner's limit: the database holds none, and the runners are meant to share their settings.
    const messageLimit = yield* Effect.orDie(numberOf(MaxMessageBytes))
    // Discord channels get their replies over REST with the bot's token, when there is one (ScheduleDiscord).
    const discord = yield* ScheduleDiscord.make
    const turns = yield* FiberSet.make()
    const answering = ScheduleRunner.oneAtATime()
    const runner = yield* ScheduleRunner.make({
      store: everyAgent(sql),
      graceMs,
      pollMs,
      refusedMessage: (keyed) => sizeProblem({ id: split(keyed.id).id, text: keyed.text }, messageLimit),
      fire: (keyed, occurrenceMs) => {
        const { agent, id } = split(keyed.id)
        const entry = { ...keyed, id }
        // The turn runs beside the runner: a long one holds back no other entry, and skips its own next runs.
        return FiberSet.run(turns, answering(keyed.id, `${id} of agent ${agent}`, occurrenceMs, Effect.gen(function*() {
          // Accepted (stored), then its reply awaited however long the turn takes: `send` gives up after
          // PLANCKCLAW_CLUSTER_SEND_TIMEOUT, an HTTP client's bound, though the message is answered all the same.
          const reply = yield* Effect.scoped(Effect.flatMap(host.accept(agent, {
            text: ScheduleDelivery.messageOf(entry),
            channel: `schedule/${id}`,
            idempotencyKey: `schedule-${id}-${occurrenceMs}`
          }), Deferred.await))
          yield* ScheduleDelivery.deliverTo({ agent, discord }, id, entry.to, reply.reply)
        }).pipe(Effect.catch((error) => Effect.logError(`schedule ${id} of agent ${agent}: ${error.message}`)))), {
          startImmediately: true
        }).pipe(Effect.asVoid)
      }
    })
    return yield* runner.run
  }))

/** The cluster's schedules, fired on one runner at a time (a Singleton of the cluster). */
export const layer = (options: { readonly pollMs?: number } = {}) =>
  Singleton.make("planckclaw/schedules", fireAll(options.pollMs ?? POLL_MS))
