/**
 * What the cluster holds under a Send's key, read without waiting for its
 * reply: effect/cluster's message storage (the message, its final reply)
 * and the TurnJournal (a reply decided under the key). ClusterHost reads it
 * right after a `discard` send has stored a message, to learn whether the
 * message stored under the key is that one, still to be answered: then the
 * message is acknowledged before its turn (the stream's `accepted`).
 */
import * as EntityAddress from "effect/cluster/EntityAddress"
import * as EntityId from "effect/cluster/EntityId"
import * as MessageStorage from "effect/cluster/MessageStorage"
import * as Sharding from "effect/cluster/Sharding"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as IdempotencyStore from "../serve/IdempotencyStore.js"
import * as AgentEntity from "./AgentEntity.js"
import { answersAnother } from "./DecidedRows.js"
import { TurnJournal } from "./TurnJournal.js"

/**
 * `Waiting`: stored, not answered yet (waiting its turn or in it), and no
 * reply decided under the key for another message; `request` names it
 * (IdempotencyStore.requestOf; undefined when its payload cannot be read).
 * `Other`: anything else (answered, a reply decided for another message, or
 * nothing there now): only its reply tells.
 */
export type Held =
  | { readonly _tag: "Waiting"; readonly request: string | undefined }
  | { readonly _tag: "Other" }

const other: Held = { _tag: "Other" }

/** What IdempotencyStore.requestOf reads of a stored payload. */
const decodeRequest = Schema.decodeUnknownOption(Schema.Struct({ text: Schema.String, channel: Schema.String }))

export const make = Effect.gen(function*() {
  const storage = yield* MessageStorage.MessageStorage
  const sharding = yield* Sharding.Sharding
  const journal = yield* TurnJournal

  /** What agent `id`'s messages hold under `key` now. */
  return (id: string, key: string) =>
    Effect.gen(function*() {
      const entityId = EntityId.make(id)
      const address = EntityAddress.make({
        entityType: AgentEntity.Agent.type,
        entityId,
        shardId: sharding.getShardId(entityId, AgentEntity.Agent.getShardGroup(entityId))
      })
      const requestId = yield* storage.requestIdForPrimaryKey({ address, tag: AgentEntity.Send._tag, id: key })
      if (Option.isNone(requestId)) return other
      // Answered already (a final reply stored, which the storage reads as processed): not found here.
      const [message] = yield* storage.unprocessedMessagesById([requestId.value])
      if (message === undefined || message._tag !== "IncomingRequest") return other
      const request = Option.match(decodeRequest(message.envelope.payload), {
        onNone: () => undefined,
        onSome: IdempotencyStore.requestOf
      })
      // Unreadable: not this message, whatever the journal holds (ClusterSends.take compares the request).
      if (request === undefined) return { _tag: "Waiting", request } satisfies Held
      // A reply decided for another message under this key (its message pruned before): the turn answers with
      // it, and ClusterHost refuses this message (key-reused).
      const decided = yield* journal.lookup(id, key)
      if (Option.isSome(decided) && answersAnother(decided.value, request)) return other
      return { _tag: "Waiting", request } satisfies Held
    })
})
