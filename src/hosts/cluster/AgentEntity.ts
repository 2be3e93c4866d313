/**
 * The agent as an effect/cluster entity, one per agent id, living on
 * whichever runner owns its shard. `Send` carries one message and returns
 * the turn's outcome; it is `Persisted`: the cluster stores the message in
 * PostgreSQL before it is processed, and a runner that dies leaves it to the
 * runner that takes the shard over. Messages to one entity are handled one
 * at a time, in order. `Cancel` cancels the turn of a message under an
 * Idempotency-Key, running or waiting its turn, as `serve` does
 * (TurnCancels). The entity is released after PLANCKCLAW_AGENT_IDLE without
 * a message.
 *
 * Each message carries a `key`, chosen by the sender: `idem:<Idempotency-Key>`
 * when the caller gave one, else a fresh random one. It is the message's
 * primary key in the cluster's storage, so a retry with the same
 * Idempotency-Key through any runner is the same message (answered once,
 * its stored reply given again), and it is the exchange's key in memory and
 * in the TurnJournal, so a redelivery after a crash neither runs the turn
 * again nor stores the exchange twice.
 */
import * as crypto from "node:crypto"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as Entity from "effect/cluster/Entity"
import * as Rpc from "effect/rpc/Rpc"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as SqlClient from "effect/sql/SqlClient"
import * as AgentLoop from "../../agent/Agent.js"
import { Brain, type BrainService, limitedBy } from "../../ports/Brain.js"
import { Claws } from "../../ports/Claws.js"
import * as Compactor from "../../agent/Compactor.js"
import { ParsedAgentConfig } from "../../config/AgentConfig.js"
import { ParsedPrices } from "../../usage/Prices.js"
import { Inbox, type Pending } from "../../memory/Inbox.js"
import * as ScheduleTool from "../../schedule/ScheduleTool.js"
import * as AgentHost from "../serve/AgentHost.js"
import * as AgentId from "../serve/AgentId.js"
import * as IdempotencyStore from "../serve/IdempotencyStore.js"
import * as TurnCancels from "../serve/TurnCancels.js"
import { AgentStore } from "./AgentStore.js"
import * as ClusterSchedules from "./ClusterSchedules.js"
import { answersAnother } from "./DecidedRows.js"
import { clusterInbox, TurnJournal } from "./TurnJournal.js"

/**
 * The agent could not be started (its settings, its memory) or could not run
 * the message. `attempt` echoes the message's, as Outcome does.
 */
export class AgentUnavailable extends Schema.TaggedError<AgentUnavailable>()("AgentUnavailable", {
  message: Schema.String,
  attempt: Schema.optional(Schema.String)
}) {}

/** A compaction that could not run: another holds the memory (`busy`) or it failed. */
export class CompactionRefused extends Schema.TaggedError<CompactionRefused>()("CompactionRefused", {
  reason: Schema.Literals(["busy", "failed"]),
  message: Schema.String
}) {}

/**
 * A turn's reply. `attempt` echoes the message's: a sender that finds
 * another attempt's failure stored under its key knows it was not this one's
 * (see retryKey). `request` names the message it answered
 * (IdempotencyStore.requestOf): a key sent again with another message is
 * refused, not answered with this reply. `cancelled` says whether it
 * answers a turn cancelled by its key (TurnCancels.CANCELLED, whose words a
 * model may also write): written on every outcome, so that one without it
 * was stored before it was added (ClusterSends.notKept reads those).
 * `notAnswered` is the turn's (TurnOutcome), where it has one: what serve's
 * /v1/mcp answers as an error. Absent on a reply decided before a failover
 * (the journal keeps its text) and on one stored before it was added.
 */
export const Outcome = Schema.Struct({
  reply: Schema.String,
  stored: Schema.Boolean,
  attempt: Schema.optional(Schema.String),
  request: Schema.optional(Schema.String),
  cancelled: Schema.optional(Schema.Boolean),
  notAnswered: Schema.optional(Schema.Literals(["failed", "refused"]))
})
export type Outcome = typeof Outcome.Type

export const Send = Rpc.make("Send", {
  payload: {
    text: Schema.String,
    channel: Schema.String,
    /** The message's identity: its primary key in the cluster and its exchange key in memory. */
    key: Schema.String,
    idempotencyKey: Schema.optional(Schema.String),
    /** Who sent it this time (random); echoed in its Outcome or AgentUnavailable. */
    attempt: Schema.optional(Schema.String)
  },
  success: Outcome,
  error: AgentUnavailable,
  primaryKey: (message) => message.key
})
  .annotate(ClusterSchema.Persisted, true)
  // A caller that stops waiting (a timeout) does not cancel the turn: the message stays accepted.
  .annotate(ClusterSchema.Uninterruptible, "client")

export type SendPayload = typeof Send.payloadSchema.Type

export const CompactResult = Schema.Struct({
  compacted: Schema.Boolean,
  summarised: Schema.Number,
  kept: Schema.Number,
  summaryBytes: Schema.Number
})

export const Compact = Rpc.make("Compact", { success: CompactResult, error: Schema.Union([AgentUnavailable, CompactionRefused]) })

/**
 * Cancels the turn of the message sent under this Idempotency-Key, running
 * or waiting its turn on the agent's runner (TurnCancels): whether there was
 * one. Not persisted: it is for the messages there now.
 */
export const Cancel = Rpc.make("Cancel", { payload: { idempotencyKey: Schema.String }, success: Schema.Boolean })

export const Agent = Entity.make("Agent", [Send, Compact, Cancel])

/** The key a message is sent under (see the module's comment). */
export const messageKey = (idempotencyKey: string | undefined): string =>
  idempotencyKey !== undefined ? `idem:${idempotencyKey}` : `msg:${crypto.randomUUID()}`

/**
 * The key of the `retry`th send of an Idempotency-Key whose earlier sends
 * were answered with a failure: the cluster keeps every reply under its
 * message's key, a failure too, so a retry that must get a turn goes under
 * the next key (ClusterHost walks them). An Idempotency-Key has no spaces,
 * so no key of another message can look like one of these.
 */
export const retryKey = (key: string, retry: number): string => retry === 0 ? key : `${key} retry ${retry}`

/** The ids of the agents started on this runner (a Cancel alone does not start one). */
export class RunningAgents extends Context.Service<RunningAgents, Set<string>>()("planckclaw/cluster/RunningAgents") {}

const describe = (error: unknown) => error instanceof Error ? error.message : String(error)

/** An agent started on this runner: what its entity's messages call. */
interface StartedAgent {
  readonly send: (message: SendPayload) => Effect.Effect<Outcome, AgentUnavailable>
  readonly compact: Effect.Effect<typeof CompactResult.Type, AgentUnavailable | CompactionRefused>
}

/** One agent, built when its entity starts on this runner. */
const startAgent = (id: AgentId.AgentId, brain: BrainService, cancels: TurnCancels.TurnCancels, maxMessageBytes: number) =>
  Effect.gen(function*() {
    const store = yield* AgentStore
    const journal = yield* TurnJournal
    const shared = yield* Claws
    // The schedule tools beside the claws, on the agent's row of the cluster's schedules (ClusterSchedules).
    const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
    const claws = Option.match(sql, {
      onNone: () => shared,
      onSome: (client) =>
        ScheduleTool.withScheduleTools(shared, { store: ClusterSchedules.sqlStore(client, id), changed: Effect.void, defaultTo: "none", discord: false, terminal: false, maxMessageBytes })
    })
    const parts = yield* store.open(id, brain)
    const inbox = Option.match(sql, {
      onNone: () => clusterInbox(id, journal),
      onSome: (client) => clusterInbox(id, journal, parts.writes === undefined ? undefined : { waiting: parts.writes, sql: client })
    })
    // The agent as every host composes it (Agent.makeFromPorts), on the store's memory and the journal's inbox.
    const built = yield* AgentLoop.makeFromPorts.pipe(
      Effect.provideContext(parts.memory.pipe(
        Context.add(Inbox, inbox),
        Context.add(Brain, parts.brain),
        Context.add(Claws, claws)
      )),
      Effect.provideService(ConfigProvider.ConfigProvider, parts.provider),
      Effect.provideService(ParsedAgentConfig, parts.settings),
      Effect.provideService(ParsedPrices, parts.prices),
      Effect.mapError((error) => new AgentUnavailable({ message: `agent ${id}: ${describe(error)}` }))
    )
    const agent = Context.get(built, AgentLoop.Agent)
    const compactor = Context.get(built, Compactor.Compactor)
    let nextId = 1

    const send = (message: SendPayload) =>
      Effect.gen(function*() {
        const decided = yield* (parts.lookup === undefined ? journal.lookup(id, message.key) : parts.lookup(message.key)).pipe(
          Effect.mapError((error) => new AgentUnavailable({ message: `agent ${id}: the database did not answer: ${error.message}` }))
        )
        const request = IdempotencyStore.requestOf(message)
        // Decided for another message under this key (its own pruned before it): that message's answer, with its
        // request, which ClusterHost refuses for this one (key-reused), and no attempt of this one (a failure it
        // answered is another attempt's). Nothing runs, nothing is stored.
        if (Option.isSome(decided) && answersAnother(decided.value, request)) return { ...decided.value, cancelled: false }
        const pending: Pending = {
          id: nextId++,
          key: message.key,
          ...(message.idempotencyKey === undefined ? {} : { idempotencyKey: message.idempotencyKey }),
          channel: message.channel,
          text: message.text,
          reply: Option.map(decided, (value) => ({ text: value.reply, stored: value.stored }))
        }
        // The entity's reply is the delivery: the agent lets the message go once it is made.
        const ran = yield* cancels.run(message.idempotencyKey, agent.respond(pending))
        // None when cancelled (nothing stored, nothing decided) or for a blank message.
        const outcome = Option.flatten(ran)
        yield* agent.delivered(pending, outcome)
        const cancelled = Option.isNone(ran)
        const { notAnswered, reply, stored }: Pick<AgentLoop.TurnOutcome, "reply" | "stored" | "notAnswered"> = cancelled
          // Answered as `serve` answers a cancelled turn; ClusterHost keeps no such reply under the key.
          ? { reply: TurnCancels.CANCELLED, stored: false }
          // None: a blank message, no reply.
          : Option.getOrElse(outcome, () => ({ reply: "", stored: false }))
        const answered: Outcome = notAnswered === undefined
          ? { reply, stored, request, cancelled }
          : { reply, stored, request, cancelled, notAnswered }
        return message.attempt === undefined ? answered : { ...answered, attempt: message.attempt }
      })

    const compact = compactor.compactNow.pipe(
      Effect.flatMap((report) =>
        Option.isSome(report)
          ? Effect.succeed({ compacted: true, summarised: report.value.summarised, kept: report.value.kept, summaryBytes: report.value.summaryBytes })
          : Effect.map(store.status(id, true), (info) => ({ compacted: false, summarised: 0, kept: info.historyLines, summaryBytes: info.summaryBytes }))
      ),
      Effect.catchTags({
        CompactionBusy: (busy) => Effect.fail(new CompactionRefused({ reason: "busy", message: `agent ${id} is being compacted by process ${busy.ownerPid}` })),
        CompactionFailed: (failed) => Effect.fail(new CompactionRefused({ reason: "failed", message: `agent ${id}: ${failed.message}` })),
        MemoryError: (failed) => Effect.fail(new CompactionRefused({ reason: "failed", message: `agent ${id}: ${failed.message}` })),
        HostError: (failed) => Effect.fail(new AgentUnavailable({ message: failed.message }))
      })
    )
    return { send, compact } satisfies StartedAgent
  })

// Named here so a host can write the type of `layer` (ClusterServe.hostLayer provides it).
export type { TurnJournal } from "./TurnJournal.js"

/**
 * The entity's behaviour on this runner. Brain calls in flight across all
 * its agents are bounded by PLANCKCLAW_MAX_CONCURRENT_TURNS, as in
 * `planckclaw serve`.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AgentHost.HostConfig
  const brain = yield* Brain
  const permits = yield* Semaphore.make(config.maxConcurrentTurns)
  const limited: BrainService = limitedBy(brain, permits)
  const running = yield* RunningAgents
  return Agent.toLayer(
    Effect.gen(function*() {
      const address = yield* Entity.CurrentAddress
      const raw = address.entityId
      yield* Effect.addFinalizer(() => Effect.sync(() => running.delete(raw)))
      const scope = yield* Effect.scope
      // One message at a time, in order, as the engine's `concurrency: 1` would take them, but taken
      // inside each message's own fiber (Rpc.fork), where a message waiting for its turn is known,
      // from its arrival to its answer, so a Cancel finds it (TurnCancels, by Idempotency-Key).
      const oneAtATime = yield* Semaphore.make(1)
      const cancels = TurnCancels.make()
      // Started by its first message, and by the next one after a start that failed: a database
      // that did not answer for a moment must not refuse the agent until its idle release.
      // Messages come one at a time, so no two starts overlap.
      let agent: StartedAgent | undefined
      const started = Effect.suspend(() => {
        if (agent !== undefined) return Effect.succeed(agent)
        if (!AgentId.is(raw)) return Effect.fail(new AgentUnavailable({ message: `agent id ${JSON.stringify(raw)} is not allowed` }))
        return Effect.gen(function*() {
          // Its own scope, closed at once if the start fails, so a failed start holds nothing.
          const own = yield* Scope.fork(scope, "sequential")
          const made = yield* startAgent(raw, limited, cancels, config.maxMessageBytes).pipe(
            Scope.provide(own),
            Effect.onExit((exit) => Exit.isFailure(exit) ? Scope.close(own, exit) : Effect.void),
            Effect.mapError((error) => error instanceof AgentUnavailable ? error : new AgentUnavailable({ message: error.message })),
            Effect.tapError((refused) => Effect.logError(refused.message))
          )
          agent = made
          running.add(raw)
          return made
        })
      })
      /** A refusal names the attempt it answers (see AgentEntity.Outcome). */
      const refusedFor = (attempt: string | undefined) => (error: AgentUnavailable) =>
        attempt === undefined ? error : new AgentUnavailable({ message: error.message, attempt })
      return Agent.of({
        Send: ({ payload }) =>
          Rpc.fork(Effect.suspend(() => {
            const key = payload.idempotencyKey
            if (key !== undefined) cancels.queued(key)
            return oneAtATime.withPermit(Effect.flatMap(started, (ready) => ready.send(payload))).pipe(
              Effect.ensuring(Effect.sync(() => key !== undefined && cancels.settled(key))),
              Effect.mapError(refusedFor(payload.attempt))
            )
          })),
        Compact: () => Rpc.fork(oneAtATime.withPermit(Effect.flatMap(started, (ready) => ready.compact))),
        // Beside the messages: never waits for a turn, never starts the agent.
        Cancel: ({ payload }) => Rpc.fork(cancels.cancel(payload.idempotencyKey))
      })
    }).pipe(Effect.annotateLogs("agent", "entity")),
    // Every message is forked (Rpc.fork) and takes `oneAtATime` itself.
    { maxIdleTime: Duration.millis(Math.round(config.idleSeconds * 1000)) }
  )
})).pipe(Layer.provideMerge(Layer.sync(RunningAgents, () => new Set<string>())))
