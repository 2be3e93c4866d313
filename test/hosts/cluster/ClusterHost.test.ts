/**
 * The cluster's AgentHost in process, over effect/cluster's TestRunner (an
 * in-memory cluster) without any runner holding the Agent entity: what a
 * send does when the agent's runner is gone (bounded by
 * PLANCKCLAW_CLUSTER_SEND_TIMEOUT, under TestClock), and the input it
 * refuses before anything reaches the cluster.
 */
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as TestRunner from "effect/cluster/TestRunner"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as AgentEntity from "../../../src/hosts/cluster/AgentEntity.js"
import { AgentStore } from "../../../src/hosts/cluster/AgentStore.js"
import * as ClusterHost from "../../../src/hosts/cluster/ClusterHost.js"
import { TurnJournal } from "../../../src/hosts/cluster/TurnJournal.js"
import { AgentHost } from "../../../src/hosts/serve/AgentHost.js"
import { HostError } from "../../../src/hosts/serve/HostError.js"
import * as HostMessage from "../../../src/hosts/serve/HostMessage.js"
import * as Runners from "./Runners.js"

const noStore = Layer.succeed(AgentStore, {
  where: "nowhere",
  open: () => Effect.die("not used"),
  exists: () => Effect.succeed(true),
  status: (id, running) => Effect.succeed({ id, historyLines: 0, summaryBytes: 0, lastMessageAt: null, state: running ? "running" : "released" }),
  page: () => Effect.succeed({ agents: [], next: null })
})

const host = ClusterHost.layer({ sendTimeoutSeconds: 30 }).pipe(
  Layer.provide(Layer.mergeAll(
    noStore,
    Layer.succeed(AgentEntity.RunningAgents, new Set()),
    Layer.succeed(TurnJournal, { lookup: () => Effect.succeedNone, record: () => Effect.void }),
    TestRunner.layer
  )),
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_MAX_MESSAGE_BYTES", "100"]])), { preserveEmptyStrings: true })))
)

const refusal = <A>(effect: Effect.Effect<A, HostError>) => Effect.flip(effect)

describe("the cluster's AgentHost", () => {
  it.effect("answers 503 after PLANCKCLAW_CLUSTER_SEND_TIMEOUT when no runner takes the agent, saying the message is kept", () =>
    Effect.gen(function*() {
      const agents = yield* AgentHost
      const fiber = yield* Effect.forkChild(agents.send("alice", { text: "hello", idempotencyKey: "k-1" }))
      yield* TestClock.adjust("29 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("2 seconds")
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error).toBeInstanceOf(HostError)
      expect(error.reason).toBe("unavailable")
      expect(error.message).toContain("did not answer within 30 s (PLANCKCLAW_CLUSTER_SEND_TIMEOUT)")
      expect(error.message).toContain("same Idempotency-Key")
    }).pipe(Effect.provide(host)))

  it.effect("refuses a streamed message with the same 503 when it cannot be taken within the timeout: no stream begins", () =>
    Effect.gen(function*() {
      const agents = yield* AgentHost
      const message = HostMessage.ofCheckedParts("alice", { text: "hello" }, "k-2")
      const fiber = yield* Effect.forkChild(agents.streamChecked(message))
      yield* TestClock.adjust("29 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("2 seconds")
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error.reason).toBe("unavailable")
      expect(error.message).toContain("did not answer within 30 s (PLANCKCLAW_CLUSTER_SEND_TIMEOUT)")
    }).pipe(Effect.provide(host)))

  it.effect("refuses a bad id, channel, key or size before the cluster sees the message", () =>
    Effect.gen(function*() {
      const agents = yield* AgentHost
      expect((yield* refusal(agents.send("Not An Id", { text: "x" }))).reason).toBe("bad-id")
      expect((yield* refusal(agents.send("bob", { text: "x", channel: "a\nb" }))).reason).toBe("bad-input")
      expect((yield* refusal(agents.send("bob", { text: "x", idempotencyKey: "has space" }))).reason).toBe("bad-input")
      const large = yield* refusal(agents.send("bob", { text: "y".repeat(101) }))
      expect(large.reason).toBe("too-large")
      expect(large.message).toContain("PLANCKCLAW_MAX_MESSAGE_BYTES")
    }).pipe(Effect.provide(host)))
})

describe("the test runners' placement of agents (Runners.placement)", () => {
  it("hashes an entity id as effect/cluster does, and gives each runner a share of the shards", async () => {
    // The package keeps its hash internal: read from its file, so a change to it fails here, not by chance later.
    const packageDir = path.dirname(createRequire(import.meta.url).resolve("effect/package.json"))
    const internal = await import(pathToFileURL(path.join(packageDir, "dist/cluster/internal/hash.js")).href) as {
      readonly hashString: (text: string) => number
    }
    for (const id of ["discord-c300000000000000010", "alice", "a", "", "é-ü", "x".repeat(300)]) {
      expect(Runners.entityHash(id), id).toBe(internal.hashString(id))
    }
    const ids = Array.from({ length: 200 }, (_, n) => `agent-${n}`)
    const placed = Runners.placement([40001, 40002], ids)
    expect(new Set(placed)).toEqual(new Set([40001, 40002]))
    expect(Runners.placement([40001], ids).every((port) => port === 40001)).toBe(true)
  })
})

describe("AgentEntity.messageKey", () => {
  it("is the Idempotency-Key when one is given, and fresh otherwise", () => {
    expect(AgentEntity.messageKey("k-1")).toBe("idem:k-1")
    expect(AgentEntity.messageKey("k-1")).toBe(AgentEntity.messageKey("k-1"))
    expect(AgentEntity.messageKey(undefined)).not.toBe(AgentEntity.messageKey(undefined))
  })
})
