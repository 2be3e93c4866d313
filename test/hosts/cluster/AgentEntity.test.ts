/**
 * The Agent entity in process, over effect/cluster's TestRunner (messages
 * stored in memory, as persisted messages are in PostgreSQL), with each
 * agent's memory as files in a temp directory and the decided replies in
 * an in-memory TurnJournal: one message at a time in order, an
 * Idempotency-Key answered once, and a message delivered again after its
 * reply was decided answered from the journal without a second turn.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as TestRunner from "effect/cluster/TestRunner"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { Brain, BrainError } from "../../../src/ports/Brain.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as AgentEntity from "../../../src/hosts/cluster/AgentEntity.js"
import { AgentStore } from "../../../src/hosts/cluster/AgentStore.js"
import { type Decided, TurnJournal } from "../../../src/hosts/cluster/TurnJournal.js"
import * as FoldStore from "../../../src/memory/FoldStore.js"
import * as Memory from "../../../src/memory/Memory.js"
import * as ClusterHost from "../../../src/hosts/cluster/ClusterHost.js"
import * as AgentHost from "../../../src/hosts/serve/AgentHost.js"
import * as IdempotencyStore from "../../../src/hosts/serve/IdempotencyStore.js"
import * as TurnCancels from "../../../src/hosts/serve/TurnCancels.js"
import { HostError } from "../../../src/hosts/serve/HostError.js"
import * as Turn from "../../../src/agent/Turn.js"

const setup = (journaled: Map<string, Decided>) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-entity-"))
  const asked: Array<string> = []
  // What the test makes fail next: the brain's answers, the agents' starts (as a database outage would).
  const failing = { brain: 0, starts: 0 }
  const brain = Layer.succeed(Brain, {
    complete: (request) =>
      Effect.suspend(() => {
        const last = request.messages[request.messages.length - 1]!
        const text = typeof last.content === "string" ? last.content : ""
        asked.push(text)
        if (failing.brain > 0) {
          failing.brain--
          return Effect.fail(new BrainError({ reason: "timeout", detail: "the test's outage" }))
        }
        // A model that writes what it is told to: "say: X" is answered X.
        return Effect.succeed(ScriptedBrain.text(text.startsWith("say: ") ? text.slice(5) : `reply to ${text}`))
      })
  })
  const store = Layer.succeed(AgentStore, {
    where: root,
    open: (id, agentBrain) => {
      if (failing.starts > 0) {
        failing.starts--
        return Effect.fail(new HostError({ reason: "unavailable", id, message: `agent ${id}: the test's database is down` }))
      }
      const provider = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_DIR", path.join(root, id)]])), { preserveEmptyStrings: true })
      return Layer.build(FoldStore.layer.pipe(Layer.provideMerge(Memory.layer))).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, provider),
        Effect.orDie,
        Effect.map((memory) => ({ memory, provider, brain: agentBrain }))
      )
    },
    exists: () => Effect.succeed(true),
    status: (id, running) => Effect.succeed({ id, historyLines: 0, summaryBytes: 0, lastMessageAt: null, state: running ? "running" : "released" }),
    page: () => Effect.succeed({ agents: [], next: null })
  })
  const journal = Layer.succeed(TurnJournal, {
    lookup: (agentId, key) => Effect.sync(() => Option.fromNullishOr(journaled.get(`${agentId}/${key}`))),
    record: (agentId, key, decided) => Effect.sync(() => void journaled.set(`${agentId}/${key}`, decided))
  })
  const parts = Layer.mergeAll(brain, InMemoryClaws.layer([]), store, journal)
  const layer = AgentEntity.layer.pipe(Layer.provideMerge(TestRunner.layer), Layer.provide(parts))
  const history = (id: string) => {
    const file = path.join(root, id, "history.jsonl")
    return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line)) : []
  }
  return { layer, parts, asked, history, failing }
}

const send = (id: string, text: string, idempotencyKey?: string) =>
  Effect.flatMap(AgentEntity.Agent.client, (client) =>
    client(id).Send({ text, channel: "http", key: AgentEntity.messageKey(idempotencyKey), ...(idempotencyKey === undefined ? {} : { idempotencyKey }) }))

describe("the Agent entity", () => {
  it.live("answers one message at a time, in order, and stores each exchange", () => {
    const kit = setup(new Map())
    return Effect.gen(function*() {
      const replies = yield* Effect.all(["one", "two", "three"].map((text) => send("ann", text)), { concurrency: "unbounded" })
      expect(replies).toEqual(["one", "two", "three"].map((text) => ({
        reply: `reply to ${text}`,
        stored: true,
        // Which message each reply answered: a key sent again with another is refused by ClusterHost.
        request: IdempotencyStore.requestOf({ channel: "http", text }),
        cancelled: false
      })))
      expect(kit.history("ann").map((line: { content: string }) => line.content)).toEqual([
        "one", "reply to one", "two", "reply to two", "three", "reply to three"
      ])
    }).pipe(Effect.provide(kit.layer), Effect.scoped)
  })

  it.live("answers an Idempotency-Key once, however often it is sent", () => {
    const kit = setup(new Map())
    return Effect.gen(function*() {
      const first = yield* send("bea", "hello", "k-1")
      expect(yield* send("bea", "hello again", "k-1")).toEqual(first)
      expect(kit.asked).toEqual(["hello"])
      expect(kit.history("bea")).toHaveLength(2)
    }).pipe(Effect.provide(kit.layer), Effect.scoped)
  })

  it.live("finishes a message whose reply was decided before a crash without running its turn again", () => {
    // The runner died after the turn decided its reply: the journal has it, the cluster delivers the message again.
    const kit = setup(new Map([["cid/idem:k-9", { reply: "the reply decided before", stored: true }]]))
    return Effect.gen(function*() {
      expect(yield* send("cid", "what was it?", "k-9")).toMatchObject({ reply: "the reply decided before", stored: true })
      expect(kit.asked).toEqual([])
      expect(kit.history("cid")).toEqual([
        { role: "user", content: "what was it?" },
        { role: "assistant", content: "the reply decided before" }
      ])
    }).pipe(Effect.provide(kit.layer), Effect.scoped)
  })
})


describe("the cluster's AgentHost over the Agent entity", () => {
  const withHost = (kit: ReturnType<typeof setup>) =>
    ClusterHost.layer({ sendTimeoutSeconds: 30 }).pipe(Layer.provideMerge(kit.layer), Layer.provide(kit.parts))

  it.live("keeps no failure under an Idempotency-Key: the retry its apology asks for gets a turn, answered once after", () => {
    const kit = setup(new Map())
    kit.failing.brain = 1
    return Effect.gen(function*() {
      const agents = yield* AgentHost.AgentHost
      expect(yield* agents.send("dee", { text: "hello", idempotencyKey: "k-2" })).toEqual({ reply: Turn.APOLOGY, stored: false, notAnswered: "failed" })
      expect(yield* agents.send("dee", { text: "hello", idempotencyKey: "k-2" })).toEqual({ reply: "reply to hello", stored: true })
      // Answered now: the reply is kept, through the failure stored before it, with no third turn.
      expect(yield* agents.send("dee", { text: "hello", idempotencyKey: "k-2" })).toEqual({ reply: "reply to hello", stored: true })
      expect(kit.asked).toEqual(["hello", "hello"])
      expect(kit.history("dee")).toEqual([{ role: "user", content: "hello" }, { role: "assistant", content: "reply to hello" }])
    }).pipe(Effect.provide(withHost(kit)), Effect.scoped)
  })

  it.live("keeps a model's reply of the cancellation's very words under its key: sent again, it gets that reply, no second turn", () => {
    const kit = setup(new Map())
    return Effect.gen(function*() {
      const agents = yield* AgentHost.AgentHost
      const message = { text: `say: ${TurnCancels.CANCELLED}`, idempotencyKey: "k-10" }
      const answer = { reply: TurnCancels.CANCELLED, stored: true }
      expect(yield* agents.send("ivy", message)).toEqual(answer)
      expect(yield* agents.send("ivy", message)).toEqual(answer)
      expect(kit.asked).toEqual([message.text])
      expect(kit.history("ivy")).toHaveLength(2)
    }).pipe(Effect.provide(withHost(kit)), Effect.scoped)
  })

  it.live("starts an agent whose start failed again at its next message, and its retry under the same key gets a turn", () => {
    const kit = setup(new Map())
    kit.failing.starts = 1
    return Effect.gen(function*() {
      const agents = yield* AgentHost.AgentHost
      const refused = yield* Effect.flip(agents.send("eli", { text: "hi", idempotencyKey: "k-3" }))
      expect(refused.reason).toBe("unavailable")
      expect(refused.message).toBe("agent eli: the test's database is down")
      expect(yield* agents.send("eli", { text: "hi", idempotencyKey: "k-3" })).toEqual({ reply: "reply to hi", stored: true })
      expect(kit.asked).toEqual(["hi"])
    }).pipe(Effect.provide(withHost(kit)), Effect.scoped)
  })

  it.live("refuses an Idempotency-Key sent again with another message (key-reused), and answers the same message again", () => {
    const kit = setup(new Map())
    return Effect.gen(function*() {
      const agents = yield* AgentHost.AgentHost
      expect(yield* agents.send("gus", { text: "pay 10", idempotencyKey: "k-5" })).toEqual({ reply: "reply to pay 10", stored: true })
      const other = yield* Effect.flip(agents.send("gus", { text: "pay 1000", idempotencyKey: "k-5" }))
      expect(other.reason).toBe("key-reused")
      expect(other.message).toContain("was already used for another message")
      expect(yield* agents.send("gus", { text: "pay 10", idempotencyKey: "k-5" })).toEqual({ reply: "reply to pay 10", stored: true })
      expect(kit.asked).toEqual(["pay 10"])
    }).pipe(Effect.provide(withHost(kit)), Effect.scoped)
  })

  it.live("refuses a key whose decided reply answered another message, gone from the cluster's storage (pruned before its turn), with no turn", () => {
    // A runner whose message storage no longer holds the first message under k-7; the journal still has its turn.
    const kit = setup(new Map([["hal/idem:k-7", { reply: "reply to pay 10", stored: true, request: IdempotencyStore.requestOf({ channel: "http", text: "pay 10" }) }]]))
    return Effect.gen(function*() {
      const agents = yield* AgentHost.AgentHost
      const other = yield* Effect.flip(agents.send("hal", { text: "pay 1000", idempotencyKey: "k-7" }))
      expect(other.reason).toBe("key-reused")
      // The message the reply answered, sent again, still gets it.
      expect(yield* agents.send("hal", { text: "pay 10", idempotencyKey: "k-7" })).toEqual({ reply: "reply to pay 10", stored: true })
      expect(kit.asked).toEqual([])
      expect(kit.history("hal")).toEqual([])
    }).pipe(Effect.provide(withHost(kit)), Effect.scoped)
  })

  it.live("gives a turn to a message under a key whose decided failure answered another message gone from the cluster's storage", () => {
    const kit = setup(new Map([["ida/idem:k-8", { reply: Turn.APOLOGY, stored: false, request: IdempotencyStore.requestOf({ channel: "http", text: "pay 10" }) }]]))
    return Effect.gen(function*() {
      const agents = yield* AgentHost.AgentHost
      // A failure is kept under no key, as in serve: the next retry key gets the turn.
      expect(yield* agents.send("ida", { text: "pay 20", idempotencyKey: "k-8" })).toEqual({ reply: "reply to pay 20", stored: true })
      expect(kit.asked).toEqual(["pay 20"])
    }).pipe(Effect.provide(withHost(kit)), Effect.scoped)
  })

  it.live("gives the last failure once a key has failed MAX_RETRIES + 1 times, without another turn", () => {
    const kit = setup(new Map())
    kit.failing.brain = ClusterHost.MAX_RETRIES + 1
    return Effect.gen(function*() {
      const agents = yield* AgentHost.AgentHost
      for (let n = 0; n <= ClusterHost.MAX_RETRIES; n++) {
        expect(yield* agents.send("fay", { text: "again", idempotencyKey: "k-4" })).toEqual({ reply: Turn.APOLOGY, stored: false, notAnswered: "failed" })
      }
      expect(yield* agents.send("fay", { text: "again", idempotencyKey: "k-4" })).toEqual({ reply: Turn.APOLOGY, stored: false, notAnswered: "failed" })
      expect(kit.asked).toHaveLength(ClusterHost.MAX_RETRIES + 1)
    }).pipe(Effect.provide(withHost(kit)), Effect.scoped)
  })
})
