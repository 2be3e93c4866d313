/**
 * The inbox journal in PostgreSQL (the Inbox port, as Inbox.ts is for
 * files): each accepted message is a row, moving accepted → answered (reply
 * decided) → delivered, with `unstored` while its exchange waits to be
 * stored. The decided reply is what keeps a turn from running twice: a
 * message accepted again under the same Idempotency-Key (a retry, or a
 * message the cluster delivers again after a runner died) gets its row
 * back, with the reply already decided, so the agent delivers that reply
 * instead of asking the brain again, and history stores it once (by key).
 * Delivered rows stay for those lookups; the oldest beyond KEPT go.
 *
 * A message's text and channel and its reply are kept exactly, a NUL
 * included (SqlExactText.ts).
 *
 * Writes wait for a database that went away; one that stays away is
 * logged, and the message is still answered in this process, only not
 * crash-safe (as with a full disk under the files' journal).
 */
import * as crypto from "node:crypto"
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Schedule from "effect/Schedule"
import type { Accepting, InboxService, Pending } from "../Inbox.js"
import type { MemoryError } from "../MemoryDir.js"
import { holdsNul, jsonOf, storable, textOf } from "./SqlExactText.js"
import { defaultRetry, resilient } from "./SqlResilience.js"

/** Finished messages kept per agent for Idempotency-Key lookups. */
export const KEPT = 1000

interface Row {
  readonly id: string
  readonly key: string
  readonly idempotency_key: string | null
  readonly channel: string
  readonly channel_json: string | null
  readonly text: string
  readonly text_json: string | null
  readonly reply: string | null
  readonly reply_json: string | null
  readonly stored: boolean
  readonly unstored: boolean
  readonly delivered: boolean
}

const pendingOf = (row: Row): Pending => ({
  id: Number(row.id),
  key: row.key,
  ...(row.idempotency_key === null ? {} : { idempotencyKey: row.idempotency_key }),
  channel: textOf(row.channel, row.channel_json),
  text: textOf(row.text, row.text_json),
  reply: row.reply === null ? Option.none() : Option.some({ text: textOf(row.reply, row.reply_json), stored: row.stored })
})

export interface SqlInboxOptions {
  readonly retry?: Schedule.Schedule<unknown> | undefined
  /**
   * Whether `recovered` lists the messages a previous run left unanswered
   * (default true). A host whose messages are redelivered by someone else
   * (the cluster's persisted messages) turns it off and relies on the
   * Idempotency-Key lookup instead.
   */
  readonly recover?: boolean | undefined
}

export const make = (agentId: string, options: SqlInboxOptions = {}): Effect.Effect<InboxService, MemoryError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const retry = options.retry ?? defaultRetry
    const columns = sql`id, key, idempotency_key, channel, channel_json, text, text_json, reply, reply_json, stored, unstored, delivered`
    const open = yield* sql<Row>`SELECT ${columns} FROM planckclaw_inbox
      WHERE agent_id = ${agentId} AND (NOT delivered OR unstored) ORDER BY id`.pipe(
      resilient(`reading the inbox of agent ${agentId}`, retry)
    )
    yield* sql`DELETE FROM planckclaw_inbox WHERE agent_id = ${agentId} AND delivered AND NOT unstored AND id < (
      SELECT id FROM planckclaw_inbox WHERE agent_id = ${agentId} ORDER BY id DESC OFFSET ${KEPT} LIMIT 1)`.pipe(
      resilient(`pruning the inbox of agent ${agentId}`, retry)
    )
    // Exchanges not stored yet, with their replies; delivered ones are the backlog the agent stores first.
    const unstored = new Map<number, { readonly pending: Pending; readonly delivered: boolean }>(
      open.filter((row) => row.unstored).map((row) => [Number(row.id), { pending: pendingOf(row), delivered: row.delivered }])
    )
    let localIds = 0

    /** A write that could not be made is logged, never fails the message; true once it was made. */
    const written = (what: string, statement: Effect.Effect<unknown, import("effect/sql/SqlError").SqlError>) =>
      statement.pipe(
        resilient(`${what} (inbox of agent ${agentId})`, retry),
        Effect.as(true),
        Effect.catch((error) => Effect.as(Effect.logError(`${error.message}; the message is answered but not crash-safe`), false))
      )
    const write = (what: string, statement: Effect.Effect<unknown, import("effect/sql/SqlError").SqlError>) =>
      Effect.asVoid(written(what, statement))

    const insert = (message: Accepting) =>
      sql<Row>`INSERT INTO planckclaw_inbox (agent_id, key, idempotency_key, channel, channel_json, text, text_json)
        VALUES (${agentId}, ${crypto.randomUUID()}, ${message.idempotencyKey ?? null}, ${storable(message.channel)},
          ${jsonOf(message.channel)}::text, ${storable(message.text)}, ${jsonOf(message.text)}::text)
        ON CONFLICT (agent_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING ${columns}`

    const existing = (idempotencyKey: string) =>
      sql<Row>`SELECT ${columns} FROM planckclaw_inbox WHERE agent_id = ${agentId} AND idempotency_key = ${idempotencyKey}`

    // Answered anyway, under an id no row has: not crash-safe, never lost in this process.
    const unjournaled = (message: Accepting, why: string) =>
      Effect.as(Effect.logError(`${why}; the message is answered but not crash-safe`), {
        id: -++localIds,
        key: crypto.randomUUID(),
        ...(message.idempotencyKey === undefined ? {} : { idempotencyKey: message.idempotencyKey }),
        channel: message.channel,
        text: message.text,
        reply: Option.none()
      } satisfies Pending)

    const accept = (message: Accepting) =>
      // A key is looked up as it is: one changed to fit a text column could be another message's. No host sends one.
      message.idempotencyKey !== undefined && holdsNul(message.idempotencyKey)
        ? unjournaled(
          message,
          `inbox of agent ${agentId}: the message's Idempotency-Key holds a NUL character, which PostgreSQL text cannot store`
        )
        : Effect.flatMap(insert(message), (rows) =>
          rows[0] !== undefined || message.idempotencyKey === undefined ? Effect.succeed(rows) : existing(message.idempotencyKey)).pipe(
            resilient(`journaling a message (inbox of agent ${agentId})`, retry),
            Effect.flatMap((rows) =>
              rows[0] === undefined ? Effect.die(new Error("inbox: the accepted row vanished")) : Effect.succeed(pendingOf(rows[0]))),
            Effect.catch((error) => unjournaled(message, error.message))
          )

    const service: InboxService = {
      recovered: options.recover === false ? [] : open.filter((row) => !row.delivered).map(pendingOf),
      // Connections belong to the pool, not to the agent: nothing to close.
      closeFiles: Effect.void,
      accept,
      answered: (pending, reply, stored) =>
        write(
          "recording a reply",
          sql`UPDATE planckclaw_inbox SET reply = ${storable(reply)}, reply_json = ${jsonOf(reply)}::text, stored = ${stored}
            WHERE id = ${pending.id}`
        ),
      unstored: (pending, reply) =>
        Effect.suspend(() => {
          unstored.set(pending.id, {
            pending: { ...pending, reply: Option.some({ text: reply, stored: true }) },
            delivered: unstored.get(pending.id)?.delivered ?? false
          })
          return written(
            "noting an exchange not stored",
            sql`UPDATE planckclaw_inbox SET reply = ${storable(reply)}, reply_json = ${jsonOf(reply)}::text, stored = true,
              unstored = true WHERE id = ${pending.id}`
          )
        }),
      stored: (pending) =>
        Effect.suspend(() => {
          if (!unstored.delete(pending.id)) return Effect.void
          return write("noting an exchange stored", sql`UPDATE planckclaw_inbox SET unstored = false WHERE id = ${pending.id}`)
        }),
      backlog: Effect.sync(() => [...unstored.values()].filter((entry) => entry.delivered).map((entry) => entry.pending)),
      delivered: (pending) =>
        Effect.suspend(() => {
          const entry = unstored.get(pending.id)
          if (entry !== undefined) unstored.set(pending.id, { ...entry, delivered: true })
          return write("noting a delivery", sql`UPDATE planckclaw_inbox SET delivered = true WHERE id = ${pending.id}`)
        })
    }
    return service
  })
