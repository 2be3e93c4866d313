/**
 * Which replies stored under a key ClusterHost keeps as the key's answer
 * (ClusterSends.notKept), and so which ones a message sent again walks past
 * to a turn of its own: a cancel is told by its `cancelled` flag, a record
 * stored before the flag existed by its words and its not being stored.
 * Over effect/cluster's TestRunner, with an Agent entity that answers the
 * key's first message with the record under test, and any other with a turn.
 */
import * as TestRunner from "effect/cluster/TestRunner"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Turn from "../../../src/agent/Turn.js"
import * as AgentEntity from "../../../src/hosts/cluster/AgentEntity.js"
import * as ClusterSends from "../../../src/hosts/cluster/ClusterSends.js"
import * as IdempotencyStore from "../../../src/hosts/serve/IdempotencyStore.js"
import { CANCELLED } from "../../../src/hosts/serve/TurnCancels.js"

const TEXT = "book the table"
const request = IdempotencyStore.requestOf({ channel: "http", text: TEXT })

/** What an earlier attempt left under the key: `record` (stored with that attempt), its retries unsent. */
const entityWith = (record: Omit<AgentEntity.Outcome, "attempt" | "request">, keys: Array<string>) =>
  AgentEntity.Agent.toLayer(Effect.succeed(AgentEntity.Agent.of({
    Send: ({ payload }) =>
      Effect.sync((): AgentEntity.Outcome => {
        keys.push(payload.key)
        return payload.key === AgentEntity.messageKey("k")
          ? { ...record, request, attempt: "an earlier attempt" }
          : { reply: "a turn of its own", stored: true, request, cancelled: false, ...(payload.attempt === undefined ? {} : { attempt: payload.attempt }) }
      }),
    Compact: () => Effect.die("not used"),
    Cancel: () => Effect.succeed(false)
  }))).pipe(Layer.provideMerge(TestRunner.layer))

/** The answer a message sent again under the key gets, and the keys it went under. */
const sentAgain = (record: Omit<AgentEntity.Outcome, "attempt" | "request">) => {
  const keys: Array<string> = []
  return Effect.gen(function*() {
    const sends = ClusterSends.make(yield* AgentEntity.Agent.client, () => Effect.succeed({ _tag: "Other" }))
    const outcome = yield* sends.sendFrom("ann", { text: TEXT, channel: "http", key: AgentEntity.messageKey("k"), idempotencyKey: "k", attempt: "this attempt" })
    return { reply: outcome.reply, keys }
  }).pipe(Effect.provide(entityWith(record, keys)))
}

const turned = { reply: "a turn of its own", keys: ["idem:k", "idem:k retry 1"] }
const kept = (reply: string) => ({ reply, keys: ["idem:k"] })

describe("a reply stored under an Idempotency-Key, met by the same message sent again", () => {
  it.live("a cancel (flagged) is not kept: the message gets a turn", () =>
    Effect.gen(function*() {
      expect(yield* sentAgain({ reply: CANCELLED, stored: false, cancelled: true })).toEqual(turned)
    }))

  it.live("a model's reply of the cancellation's very words (flagged not cancelled) is kept, stored or not", () =>
    Effect.gen(function*() {
      expect(yield* sentAgain({ reply: CANCELLED, stored: true, cancelled: false })).toEqual(kept(CANCELLED))
      expect(yield* sentAgain({ reply: CANCELLED, stored: false, cancelled: false })).toEqual(kept(CANCELLED))
    }))

  it.live("a record stored before the flag is a cancel when it is CANCELLED's text unstored, kept when stored", () =>
    Effect.gen(function*() {
      expect(yield* sentAgain({ reply: CANCELLED, stored: false })).toEqual(turned)
      expect(yield* sentAgain({ reply: CANCELLED, stored: true })).toEqual(kept(CANCELLED))
      expect(yield* sentAgain({ reply: "an answer", stored: false })).toEqual(kept("an answer"))
    }))

  it.live("a failure is not kept, flagged or not", () =>
    Effect.gen(function*() {
      expect(yield* sentAgain({ reply: Turn.APOLOGY, stored: false, cancelled: false })).toEqual(turned)
      expect(yield* sentAgain({ reply: Turn.APOLOGY, stored: false })).toEqual(turned)
    }))
})
