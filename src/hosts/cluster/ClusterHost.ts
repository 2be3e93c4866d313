/**
 * The AgentHost of a cluster runner: the same service the HTTP API of
 * `planckclaw serve` consumes, whose `send` and `compact` go to the agent's
 * entity wherever it lives. A send waits at most
 * PLANCKCLAW_CLUSTER_SEND_TIMEOUT (the entity's runner may be dead and its
 * shard not moved yet); past it the caller gets `unavailable` (HTTP 503),
 * and the message, already stored by the cluster, is still answered: a retry
 * with the same Idempotency-Key returns that answer. A streamed send has
 * that bound only until its message is taken (stored to be answered,
 * ClusterSends.take, the stream's `accepted`); then it waits for the reply
 * however long the turn and a failover take, as `serve`'s stream does.
 */
import * as crypto from "node:crypto"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import * as Sharding from "effect/cluster/Sharding"
import * as Stream from "effect/Stream"
import { SqlError } from "effect/sql/SqlError"
import { describe } from "../../memory/sql/SqlResilience.js"
import * as AgentHost from "../serve/AgentHost.js"
import type * as AgentRecords from "../serve/AgentRecords.js"
import type { HostError } from "../serve/HostError.js"
import * as HostMessage from "../serve/HostMessage.js"
import * as AgentEntity from "./AgentEntity.js"
import { AgentStore } from "./AgentStore.js"
import * as ClusterSends from "./ClusterSends.js"
import * as HeldMessages from "./HeldMessages.js"
import type { TurnJournal } from "./TurnJournal.js"

/** What the database said, without the engine's wrapping (never the URL: SqlResilience.describe). */
const databaseProblem = (error: { readonly cause?: unknown }): string =>
  error.cause instanceof SqlError ? describe(error.cause) : "no answer"

// The refusals are AgentHost's, so serve and the cluster answer bad input alike.
const { parseId, refuse } = AgentHost

/** How many times one Idempotency-Key answered with a failure is given a new turn (AgentEntity.retryKey). */
export const MAX_RETRIES = ClusterSends.MAX_RETRIES

/** The caller's answer of an entity's outcome: `cancelled` only on a cancel's, `notAnswered` where it has one, as `serve` answers. */
const replyOf = ({ cancelled, notAnswered, reply, stored }: AgentEntity.Outcome): AgentHost.Reply => ({
  reply,
  stored,
  ...(cancelled === true ? { cancelled } : {}),
  ...(notAnswered === undefined ? {} : { notAnswered })
})

/** A message taken whose reply could not be awaited here: said in its reply, as its stream has begun. */
const unanswered = (id: string) => (refused: HostError) =>
  Effect.as(Effect.logWarning(`agent ${id} could not answer a message: ${refused.message}`), {
    reply: `Sorry, I could not answer that message: ${refused.message}`,
    stored: false,
    notAnswered: "failed" as const
  })

export const make = (options: { readonly sendTimeoutSeconds: number }) =>
  Effect.gen(function*() {
    const config = yield* AgentHost.HostConfig
    const store = yield* AgentStore
    const running = yield* AgentEntity.RunningAgents
    const client = yield* AgentEntity.Agent.client
    const sends = ClusterSends.make(client, yield* HeldMessages.make)
    const timeout = `${options.sendTimeoutSeconds} s (PLANCKCLAW_CLUSTER_SEND_TIMEOUT)`

    /** The cluster's errors as the host's: the runner or the database is not there now. */
    const clusterError = (id: string) => (error: { readonly _tag: string; readonly message?: string; readonly cause?: unknown }) => {
      switch (error._tag) {
        case "HostError":
          // Ours already (a key sent again with another message): as it is.
          return Effect.fail(error as HostError)
        case "AgentUnavailable":
          return refuse("unavailable", error.message ?? `agent ${id} is unavailable`, id)
        case "CompactionRefused":
          return refuse((error as AgentEntity.CompactionRefused).reason, error.message ?? "", id)
        case "TimeoutError":
          return refuse(
            "unavailable",
            `agent ${id} did not answer within ${timeout}: its runner may be failing over. The message is kept and ` +
              "will be answered; send it again with the same Idempotency-Key to get that answer",
            id
          )
        case "PersistenceError":
          return refuse(
            "unavailable",
            `agent ${id}: the database is unavailable (${databaseProblem(error)}); the message may not be kept: ` +
              "send it again with the same Idempotency-Key once the database is back (it is answered once)",
            id
          )
        case "MailboxFull":
          return refuse("unavailable", `agent ${id} has too many messages waiting; try again shortly`, id)
        default:
          return refuse("unavailable", `agent ${id}: the cluster could not take the message (${error._tag}${error.message ? `: ${error.message}` : ""})`, id)
      }
    }

    // Checked as serve checks it (the same Schemas), for what comes unchecked (Discord's routes, an embedder).
    const check = HostMessage.decoder(config.maxMessageBytes)

    /** The checked message as the entity's payload, under the key it is stored with. */
    const prepare = ({ channel, id, idempotencyKey: key, text }: HostMessage.HostMessage) => ({
      id,
      payload: {
        text,
        channel,
        key: AgentEntity.messageKey(key),
        ...(key === undefined ? {} : { idempotencyKey: key })
      }
    })

    const sendChecked = (message: HostMessage.HostMessage) => {
      const { id, payload } = prepare(message)
      return sends.sendFrom(id, { ...payload, attempt: crypto.randomUUID() }).pipe(
        Effect.map(replyOf),
        Effect.timeout(`${options.sendTimeoutSeconds} seconds`),
        Effect.catch(clusterError(id))
      )
    }

    /**
     * The message taken, stored in PostgreSQL to be answered
     * (ClusterSends.take), or answered already (a kept reply), refused before
     * as `sendChecked` is (a reused key, the send timeout); then the wait for
     * its reply, without a bound (the turn and a failover may take long), a
     * failure to await it said in the reply.
     */
    const taken = (message: HostMessage.HostMessage) => {
      const { id, payload: prepared } = prepare(message)
      const payload = { ...prepared, attempt: crypto.randomUUID() }
      return sends.take(id, payload).pipe(
        Effect.timeout(`${options.sendTimeoutSeconds} seconds`),
        Effect.catch(clusterError(id)),
        Effect.map((took) =>
          took._tag === "Answered"
            ? Effect.succeed(replyOf(took.outcome))
            : sends.sendFrom(id, payload, took.retry).pipe(Effect.map(replyOf), Effect.catch(clusterError(id)), Effect.catch(unanswered(id)))
        )
      )
    }

    /**
     * `sendChecked` for the message stream: it succeeds (the stream's
     * `accepted`) once the message is `taken`. The turn's events are not
     * told across runners: its reply alone follows.
     */
    const streamChecked = (message: HostMessage.HostMessage) =>
      Effect.map(taken(message), (reply) => ({ events: Stream.empty, reply }))

    /**
     * Accepting is the cluster storing the message (`taken`): it returns once
     * PostgreSQL holds it, so a caller's next message is stored after it. Its
     * key is answered as `sendChecked` answers it: a message handed over
     * again after a failure (a takeover, a redelivery) gets a turn under the
     * key's next retry, and a key holding another message is refused. The
     * reply is awaited in the background, wherever the entity runs, so the
     * caller meanwhile hands over messages for other agents (the Discord routes).
     */
    const accept = (raw: string, message: AgentHost.SendOptions) =>
      Effect.gen(function*() {
        const reply = yield* taken(yield* check(raw, message))
        const done = yield* Deferred.make<AgentHost.Reply>()
        yield* reply.pipe(Effect.flatMap((answer) => Deferred.succeed(done, answer)), Effect.forkScoped)
        return done
      })

    const existing = (raw: string) =>
      Effect.flatMap(parseId(raw), (id) =>
        Effect.flatMap(store.exists(id), (found) => found ? Effect.succeed(id) : refuse("not-found", `no agent ${id}`, id)))

    // Read from the database (the agent's row of planckclaw_schedules, ClusterRecords), where the store has one.
    const { records, schedules } = store

    const compact = (raw: string) =>
      Effect.flatMap(existing(raw), (id) =>
        client(id).Compact().pipe(
          Effect.timeout(`${options.sendTimeoutSeconds} seconds`),
          Effect.catch(clusterError(id))
        ))

    /**
     * The turn of the key's latest attempt, running or waiting its turn on
     * the agent's runner (AgentEntity's Cancel): its sender is answered
     * CANCELLED and nothing is stored, as in `serve`.
     */
    const cancel = (raw: string, key: string) =>
      Effect.flatMap(existing(raw), (id) =>
        client(id).Cancel({ idempotencyKey: key }).pipe(
          Effect.timeout(`${options.sendTimeoutSeconds} seconds`),
          Effect.catch(clusterError(id))
        ))

    return {
      directory: store.where,
      sendChecked,
      streamChecked,
      send: (raw, message) => Effect.flatMap(check(raw, message), sendChecked),
      accept,
      list: (page) => store.page(page, (id) => running.has(id)),
      get: (raw) => Effect.flatMap(existing(raw), (id) => store.status(id, running.has(id))),
      compact,
      cancel,
      ...(schedules === undefined ? {} : { schedules: (raw: string) => Effect.flatMap(existing(raw), schedules) }),
      ...(records === undefined ? {} : {
        history: (raw: string, page: { readonly before?: number | undefined; readonly limit: number }) =>
          Effect.flatMap(existing(raw), (id) => records.history(id, page)),
        usage: (raw: string, period: AgentRecords.Period) => Effect.flatMap(existing(raw), (id) => records.usage(id, period)),
        memory: (raw: string) => Effect.flatMap(existing(raw), records.memory),
        usageAll: records.usageAll
      })
    } satisfies AgentHost.AgentHostService
  })

export const layer = (options: { readonly sendTimeoutSeconds: number }): Layer.Layer<
  AgentHost.AgentHost,
  import("effect/Config").ConfigError,
  AgentStore | AgentEntity.RunningAgents | Sharding.Sharding | MessageStorage.MessageStorage | TurnJournal
> => Layer.effect(AgentHost.AgentHost, make(options))
