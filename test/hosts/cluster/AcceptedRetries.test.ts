/**
 * The cluster's AgentHost `accept` (what the Discord routes call, each
 * message under its Discord id as Idempotency-Key) answers a key as
 * `sendChecked` and the stream do (ClusterSends): a failure answered under
 * the key is not kept, so the message handed over again (a takeover, the
 * gateway's redelivery) gets a turn under the key's next retry; a key
 * holding another message's kept reply is refused; and accepting still
 * means the message is stored in PostgreSQL to be answered. The entity and
 * the host in process over a throwaway PostgreSQL, the cluster's messages in
 * its `cluster_` tables as a runner keeps them.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, type Layer } from "effect"
import * as Turn from "../../../src/agent/Turn.js"
import { AgentHost, awaitReply } from "../../../src/hosts/serve/AgentHost.js"
import { usePostgres } from "../../support/Postgres.js"
import { eventually, within } from "../../support/Sandbox.js"
import type { host } from "./EntityOverPostgres.js"
import { type HeldKit, stored, withHeldHost } from "./HeldHost.js"

const server = usePostgres()

/** A Discord message as the routes hand it over: its text, its channel, its Discord id as key. */
const discord = (text: string, key: string) => ({ text, channel: "300000000000000010", idempotencyKey: key })

/** Accepts the message and waits for its reply, the agent held started meanwhile (as the routes do). */
const acceptAndAwait = (id: string, message: ReturnType<typeof discord>) =>
  Effect.scoped(Effect.flatMap(AgentHost, (agents) => Effect.flatMap(agents.accept(id, message), awaitReply)))

const withHost = <A, E>(test: (kit: HeldKit) => Effect.Effect<A, E, Layer.Success<ReturnType<typeof host>> | SqlClient.SqlClient>) =>
  withHeldHost(server, test)

describe("a Discord message accepted by a cluster agent", () => {
  it.live("handed over again after its first answer was a failure, gets a turn under the key's next retry", () =>
    withHost(({ asked, failing, sql }) =>
      Effect.gen(function*() {
        failing.count = 1
        expect(yield* acceptAndAwait("ann", discord("Alice: hello", "discord-1"))).toEqual({ reply: Turn.APOLOGY, stored: false, notAnswered: "failed" })
        expect(yield* acceptAndAwait("ann", discord("Alice: hello", "discord-1"))).toEqual({ reply: "reply to Alice: hello", stored: true })
        expect(asked).toEqual(["Alice: hello", "Alice: hello"])
        expect((yield* stored(sql, "ann")).map((row) => row.key)).toEqual(["idem:discord-1", "idem:discord-1 retry 1"])
        // Handed over once more: the kept reply, no third turn.
        expect(yield* acceptAndAwait("ann", discord("Alice: hello", "discord-1"))).toEqual({ reply: "reply to Alice: hello", stored: true })
        expect(asked).toHaveLength(2)
      })), 60_000)

  it.live("under a key holding another message's kept reply, is refused, never given that reply", () =>
    withHost(({ asked }) =>
      Effect.gen(function*() {
        expect(yield* acceptAndAwait("bo", discord("Alice: pay 10", "discord-2"))).toEqual({ reply: "reply to Alice: pay 10", stored: true })
        const refused = yield* Effect.flip(acceptAndAwait("bo", discord("Alice: pay 1000", "discord-2")))
        expect(refused).toMatchObject({ reason: "key-reused" })
        expect(asked).toEqual(["Alice: pay 10"])
      })), 60_000)

  it.live("is accepted once PostgreSQL holds it, while its turn is held; its reply follows", () =>
    withHost(({ asked, gate, sql }) =>
      Effect.gen(function*() {
        const agents = yield* AgentHost
        yield* Effect.scoped(Effect.gen(function*() {
          const done = yield* agents.accept("cy", discord("hold the line", "discord-3")).pipe(within("the message to be accepted"))
          expect(yield* stored(sql, "cy")).toEqual([{ key: "idem:discord-3", answered: false }])
          yield* eventually("the turn's brain call", () => asked.includes("hold the line") || undefined)
          expect(yield* Deferred.isDone(done)).toBe(false)
          yield* Deferred.succeed(gate, undefined)
          expect(yield* awaitReply(done).pipe(within("the reply"))).toEqual({ reply: "reply to hold the line", stored: true })
        }))
        expect(asked).toEqual(["hold the line"])
      })), 60_000)
})
