/**
 * effect/cluster's message storage in PostgreSQL (SqlMessageStorage, the
 * `cluster_` tables), with a request's final reply stored in one statement.
 * The engine stores it as a transaction of four round trips (BEGIN, the
 * message marked processed, the reply inserted, COMMIT), which the agent's
 * next message waits for; here the same two changes go as data-modifying
 * CTEs of one statement, which is one transaction as well: the message is
 * processed exactly when its reply is stored. Streamed replies (chunks),
 * which no PlanckClaw entity sends, and everything else go as the engine
 * stores them.
 *
 * The statement writes the engine's own tables: checked against
 * effect 4.1.5's schema (its migrations) by the cluster tests, which run on
 * it.
 */
import { PersistenceError } from "effect/cluster/ClusterError"
import * as MessageStorage from "effect/cluster/MessageStorage"
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Snowflake from "effect/cluster/Snowflake"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import type * as Digest from "effect/crypto/Digest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"

/** The engine's reply kind for a final reply (SqlMessageStorage's `replyKind.WithExit`). */
const WITH_EXIT = 0

/** The engine's storage with `saveReply` of a final reply as one statement. */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const encoded = yield* SqlMessageStorage.makeEncodedStorage({})
  const saveReply: MessageStorage.Encoded["saveReply"] = (reply) =>
    reply._tag !== "WithExit" ? encoded.saveReply(reply) : sql`WITH processed AS (
        UPDATE cluster_messages SET processed = TRUE, last_reply_id = ${reply.id} WHERE request_id = ${reply.requestId}
      )
      INSERT INTO cluster_replies (id, kind, request_id, payload, sequence)
      VALUES (${reply.id}, ${WITH_EXIT}, ${reply.requestId}, ${JSON.stringify(reply.exit)}, NULL)`.pipe(
      Effect.asVoid,
      PersistenceError.refail,
      Effect.withTracerEnabled(false)
    )
  return yield* MessageStorage.makeEncoded({ ...encoded, saveReply })
})

/** In place of SqlMessageStorage.layerStorage({}). */
export const layer: Layer.Layer<MessageStorage.MessageStorage, never, SqlClient.SqlClient | ShardingConfig.ShardingConfig | Digest.Digest> =
  Layer.effect(MessageStorage.MessageStorage, make).pipe(Layer.provide(Snowflake.layerGenerator))
