/**
 * The agent, composed: its compactor and memory around the agent itself
 * (AgentCore.ts: one accepted message to its outcome), as one layer used by
 * every host, and the names embedding hosts know.
 */
import type * as ConfigError from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { make } from "./AgentCore.js"
import { Agent } from "./AgentService.js"
import type { Brain } from "../ports/Brain.js"
import type { Claws } from "../ports/Claws.js"
import * as Logging from "../runtime/Logging.js"
import * as Compaction from "./Compactor.js"
import { Compactor } from "./Compactor.js"
import * as FoldStore from "../memory/FoldStore.js"
import * as InboxStore from "../memory/Inbox.js"
import type { Inbox } from "../memory/Inbox.js"
import * as MemoryStore from "../memory/Memory.js"
import type { Memory } from "../memory/Memory.js"
import * as MemoryHold from "../memory/MemoryHold.js"
import * as UsageLedger from "../usage/UsageLedger.js"

export { make, ONLY_CONTROLS } from "./AgentCore.js"
export { Agent, type AgentService } from "./AgentService.js"
export { APOLOGY, type NotAnswered, type ToolCallMade, type TurnEvent, type TurnOutcome, type TurnUsage } from "./Turn.js"

// Logs of start-up (a stored backlog) go to stderr, as the intake loop's do.
// Scoped: its release waits for (or, on shutdown, stops) the compaction in flight.
/** The agent given its compactor: a part of `fromPorts`, for a host that brings a compactor of its own. */
export const layer: Layer.Layer<
  Agent,
  ConfigError.ConfigError,
  Brain | Claws | Memory | Compactor | Inbox
> = Layer.effect(Agent, Logging.toStderr(make))

/**
 * What an agent is built from: its memory store (Memory, and the FoldStore
 * its compactions commit through), its inbox journal, its Brain (recording
 * usage when the host keeps a ledger) and its Claws.
 */
export type AgentPorts = Brain | Claws | Memory | FoldStore.FoldStore | Inbox

/**
 * The one composition of an agent: its compactor, then the agent on it, in
 * the caller's scope (released, it waits for the compaction in flight).
 * `run` (through fromPorts), `serve` and the cluster's entity all use it;
 * hosts of many agents call it directly, as a layer's build keeps about
 * 7 KiB more per agent (memo map, scopes, finalizers).
 */
export const makeFromPorts: Effect.Effect<
  Context.Context<Agent | Compactor>,
  ConfigError.ConfigError,
  AgentPorts | Scope.Scope
> = Effect.gen(function*() {
  const compactor = yield* Compaction.make
  const agent = yield* Effect.provideService(Logging.toStderr(make), Compactor, compactor)
  return Context.make(Compactor, compactor).pipe(Context.add(Agent, agent))
})

/** `makeFromPorts` as a layer: each call a layer of its own, never shared between two agents by memoization. */
export const fromPorts = (): Layer.Layer<Agent | Compactor, ConfigError.ConfigError, AgentPorts> =>
  Layer.effectContext(makeFromPorts)

/**
 * `layerWithMemory` on a PLANCKCLAW_DIR its caller already holds
 * (MemoryHold.layer), as `run` holds it before its bridges start.
 */
export const layerOnHeldMemory: Layer.Layer<
  Agent | Compactor | Memory | Inbox,
  ConfigError.ConfigError | MemoryStore.MemoryError,
  Brain | Claws | MemoryHold.MemoryHeld
> = fromPorts().pipe(
  // Every answer the turns and the compactions get is counted in usage.jsonl.
  Layer.provide(Layer.merge(UsageLedger.layer, FoldStore.layer)),
  Layer.provideMerge(Layer.merge(MemoryStore.layer, InboxStore.layer))
)

/**
 * The agent with its memory (PLANCKCLAW_DIR), compaction and usage ledger: what a host
 * needs to provide is a Brain and Claws, then run `Intake.run` (or `serve`)
 * with an Interact. It holds the directory first, for its scope, as `run`
 * does: the inbox journal must have one writer, so beside a live `run`, a
 * serve's agent or another layerWithMemory on it, it fails with MemoryHold.MemoryInUse.
 */
export const layerWithMemory: Layer.Layer<
  Agent | Compactor | Memory | Inbox,
  ConfigError.ConfigError | MemoryStore.MemoryError | MemoryHold.MemoryInUse | MemoryHold.MemoryLockFailed,
  Brain | Claws
> = layerOnHeldMemory.pipe(Layer.provide(MemoryHold.layer))

/** Serving a bridge's messages; the name embedding hosts know (see Intake.run). */
export { run as serve } from "./Intake.js"
