/**
 * How ClusterHost sends a message to its agent's entity under an
 * Idempotency-Key's retries, as `serve` answers a key: a failure or a
 * cancel answers only the attempt that met it (none is kept under the key),
 * so a message sent again after one gets a turn, under the key's next retry
 * (AgentEntity.retryKey); a kept reply answers the same message again and
 * refuses another (key-reused).
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Turn from "../../agent/Turn.js"
import { refuse } from "../serve/AgentHost.js"
import * as IdempotencyStore from "../serve/IdempotencyStore.js"
import * as TurnCancels from "../serve/TurnCancels.js"
import * as AgentEntity from "./AgentEntity.js"
import type { Held } from "./HeldMessages.js"

/** How many times one Idempotency-Key answered with a failure is given a new turn (AgentEntity.retryKey). */
export const MAX_RETRIES = 20

/**
 * A reply that answers its attempt only: a failure, a cancelled turn. A
 * cancel is told by its `cancelled` flag, never by its words, which a model
 * may write. An outcome stored before the flag was written (no flag at all)
 * is a cancel when it is CANCELLED's text unstored: a cancel stores nothing.
 */
export const notKept = (outcome: Pick<AgentEntity.Outcome, "reply" | "stored" | "cancelled">): boolean =>
  Turn.isFailureReply(outcome.reply) || (outcome.cancelled ?? (outcome.reply === TurnCancels.CANCELLED && !outcome.stored))

/** The entity's client, as `AgentEntity.Agent.client` makes it. */
type Client = Effect.Success<typeof AgentEntity.Agent.client>

export const make = (client: Client, held: (id: string, key: string) => Effect.Effect<Held, { readonly _tag: string }>) => {
  const sendOne = (id: string, payload: AgentEntity.SendPayload) => client(id).Send(payload)
  type Sent = ReturnType<typeof sendOne>

  /**
   * What the send of retry `retry` answered means for `payload`: its answer
   * (a refusal when it answered another message), or undefined when it was
   * an earlier attempt's failure and the next retry is to be sent. Past
   * MAX_RETRIES the last failure is the answer. Replies stored before
   * `request` was kept cannot tell the message: they answer.
   */
  const judged = (id: string, payload: AgentEntity.SendPayload, retry: number, result: Result.Result<Effect.Success<Sent>, Effect.Error<Sent>>) => {
    const request = Result.isSuccess(result) && !notKept(result.success) ? result.success.request : undefined
    if (payload.idempotencyKey !== undefined && request !== undefined && request !== IdempotencyStore.requestOf(payload)) {
      return refuse("key-reused", IdempotencyStore.reusedKey(payload.idempotencyKey), id)
    }
    const answered = Result.match(result, {
      onFailure: (error) => error._tag === "AgentUnavailable" ? error.attempt : payload.attempt,
      onSuccess: (outcome) => notKept(outcome) ? outcome.attempt : payload.attempt
    })
    const earlierFailure = payload.idempotencyKey !== undefined && answered !== payload.attempt
    return !earlierFailure || retry === MAX_RETRIES ? Effect.fromResult(result) : undefined
  }

  /** Sends `payload` under the key's retries from `first` until one answers it (`judged`). */
  const sendFrom = (id: string, payload: AgentEntity.SendPayload, first = 0) =>
    Effect.gen(function*() {
      for (let retry = first;; retry++) {
        const answer = judged(id, payload, retry, yield* Effect.result(sendOne(id, { ...payload, key: AgentEntity.retryKey(payload.key, retry) })))
        if (answer !== undefined) return yield* answer
      }
    })

  /**
   * Takes `payload` for its turn without waiting for it: under each retry
   * `sendFrom` would send, the message is sent with `discard`, which returns
   * once the cluster's storage holds it (or another under its key), and what
   * the key holds is read. This message waiting there is taken: it will be
   * answered, whatever becomes of a runner. A reply there, or another
   * message's turn, is waited for and judged as `sendFrom` judges it: the
   * answer (a kept reply, a refusal), or the next retry.
   */
  const take = (id: string, payload: AgentEntity.SendPayload) =>
    Effect.gen(function*() {
      const request = IdempotencyStore.requestOf(payload)
      for (let retry = 0;; retry++) {
        const sent = { ...payload, key: AgentEntity.retryKey(payload.key, retry) }
        yield* client(id).Send(sent, { discard: true })
        const there = yield* held(id, sent.key)
        if (there._tag === "Waiting" && there.request === request) return { _tag: "Taken", retry } as const
        const answer = judged(id, payload, retry, yield* Effect.result(sendOne(id, sent)))
        if (answer !== undefined) return { _tag: "Answered", outcome: yield* answer } as const
      }
    })

  return { sendFrom, take }
}
