/**
 * The cluster's AgentHost takes a streamed message (the stream's
 * `accepted`) once it is stored to be answered, before its turn: the
 * entity and the host in process over a throwaway PostgreSQL, the
 * cluster's messages in its `cluster_` tables as a runner keeps them. A key
 * whose stored message cannot be this one's (another text's, a reply kept
 * for another) is refused before anything is acknowledged, as `serve` does;
 * under a key whose other message is in its turn, that turn's reply decides.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, type Layer } from "effect"
import * as Turn from "../../../src/agent/Turn.js"
import * as AgentEntity from "../../../src/hosts/cluster/AgentEntity.js"
import * as ClusterSends from "../../../src/hosts/cluster/ClusterSends.js"
import * as HeldMessages from "../../../src/hosts/cluster/HeldMessages.js"
import * as TurnJournal from "../../../src/hosts/cluster/TurnJournal.js"
import { AgentHost } from "../../../src/hosts/serve/AgentHost.js"
import * as HostMessage from "../../../src/hosts/serve/HostMessage.js"
import * as IdempotencyStore from "../../../src/hosts/serve/IdempotencyStore.js"
import { usePostgres } from "../../support/Postgres.js"
import { eventually, within } from "../../support/Sandbox.js"
import type { host } from "./EntityOverPostgres.js"
import { type HeldKit, stored, withHeldHost } from "./HeldHost.js"

const server = usePostgres()

const message = (id: string, text: string, key: string) => HostMessage.ofCheckedParts(id, { text }, key)

const withHost = <A, E>(test: (kit: HeldKit) => Effect.Effect<A, E, Layer.Success<ReturnType<typeof host>> | SqlClient.SqlClient>) =>
  withHeldHost(server, test)

describe("a streamed message to a cluster agent", () => {
  it.live("is taken once stored, while its turn is held in the brain; its reply follows", () =>
    withHost(({ asked, gate, sql }) =>
      Effect.gen(function*() {
        const agents = yield* AgentHost
        // Taken while the brain holds the turn (the gate opens only below).
        const taken = yield* agents.streamChecked(message("amy", "hold the line", "k-1")).pipe(within("the message to be taken"))
        yield* eventually("the turn's brain call", () => asked.includes("hold the line") || undefined)
        // In the cluster's storage, not answered.
        expect(yield* stored(sql, "amy")).toEqual([{ key: "idem:k-1", answered: false }])
        yield* Deferred.succeed(gate, undefined)
        expect(yield* taken.reply.pipe(within("the reply"))).toEqual({ reply: "reply to hold the line", stored: true })
        expect(asked).toEqual(["hold the line"])
        // Sent again: taken at once (a kept reply), no second turn.
        const again = yield* agents.streamChecked(message("amy", "hold the line", "k-1"))
        expect(yield* again.reply).toEqual({ reply: "reply to hold the line", stored: true })
        expect(asked).toEqual(["hold the line"])
      })), 60_000)

  it.live("after a failure under its key is taken under the key's next retry, which its turn answers", () =>
    withHost(({ asked, failing, sql }) =>
      Effect.gen(function*() {
        const agents = yield* AgentHost
        failing.count = 1
        expect(yield* agents.sendChecked(message("bo", "hello", "k-2"))).toEqual({ reply: Turn.APOLOGY, stored: false, notAnswered: "failed" })
        const taken = yield* agents.streamChecked(message("bo", "hello", "k-2"))
        expect((yield* stored(sql, "bo")).map((row) => row.key)).toEqual(["idem:k-2", "idem:k-2 retry 1"])
        expect(yield* taken.reply).toEqual({ reply: "reply to hello", stored: true })
        expect(asked).toEqual(["hello", "hello"])
      })), 60_000)

  it.live("is refused before anything is acknowledged when its key holds another message's kept reply", () =>
    withHost(({ asked }) =>
      Effect.gen(function*() {
        const agents = yield* AgentHost
        expect(yield* agents.sendChecked(message("cy", "pay 10", "k-3"))).toEqual({ reply: "reply to pay 10", stored: true })
        expect((yield* Effect.flip(agents.streamChecked(message("cy", "pay 1000", "k-3")))).reason).toBe("key-reused")
        expect(asked).toEqual(["pay 10"])
      })), 60_000)

  it.live("under a key whose other message is in its turn, is not taken: that turn's reply, kept, refuses it", () =>
    withHost(({ asked, gate, sql }) =>
      Effect.gen(function*() {
        const agents = yield* AgentHost
        const first = yield* Effect.forkChild(agents.sendChecked(message("cy", "hold 5", "k-4")))
        yield* eventually("the held turn's brain call", () => asked.includes("hold 5") || undefined)
        // The host's steps (ClusterSends), with what the key holds seen as they look at it.
        const seen = yield* Deferred.make<HeldMessages.Held>()
        const held = yield* HeldMessages.make.pipe(Effect.provide(TurnJournal.layer))
        const sends = ClusterSends.make(yield* AgentEntity.Agent.client, (id, key) => Effect.tap(held(id, key), (there) => Deferred.succeed(seen, there)))
        const payload = { text: "hold 6", channel: "http", key: AgentEntity.messageKey("k-4"), idempotencyKey: "k-4", attempt: "this attempt" }
        const other = yield* Effect.forkChild(sends.take("cy", payload))
        // Seen while the first waits its reply: stored, unanswered, but another message; not taken for this one.
        expect(yield* Deferred.await(seen).pipe(within("the key looked at"))).toEqual({
          _tag: "Waiting",
          request: IdempotencyStore.requestOf({ channel: "http", text: "hold 5" })
        })
        expect(other.pollUnsafe()).toBeUndefined()
        yield* Deferred.succeed(gate, undefined)
        expect(yield* Fiber.join(first)).toEqual({ reply: "reply to hold 5", stored: true })
        expect(yield* Effect.flip(Fiber.join(other))).toMatchObject({ reason: "key-reused" })
        expect(asked).toEqual(["hold 5"])
        expect((yield* stored(sql, "cy")).map((row) => row.key)).toEqual(["idem:k-4"])
      })), 60_000)

  it.live("is refused before anything is acknowledged when its key's decided reply answered another message (pruned from the cluster)", () =>
    withHost(({ asked, sql }) =>
      Effect.gen(function*() {
        const agents = yield* AgentHost
        const request = IdempotencyStore.requestOf({ channel: "http", text: "pay 10" })
        yield* sql`INSERT INTO planckclaw_cluster_turns (agent_id, message_key, reply, stored, request)
          VALUES ('dee', 'idem:k-5', 'reply to pay 10', TRUE, ${request})`
        expect((yield* Effect.flip(agents.streamChecked(message("dee", "pay 1000", "k-5")))).reason).toBe("key-reused")
        expect(asked).toEqual([])
      })), 60_000)
})
