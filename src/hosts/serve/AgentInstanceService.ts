/**
 * What the host and one started agent (AgentInstance.make) know of each other: the message it
 * takes, the host's parts it is given (Shared), the service the host's LayerMap holds (Instance),
 * and the host's record of each instance until its scope has closed (Life). Apart from
 * AgentInstance.ts so that file holds the instance's making alone.
 */
import type * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import type * as Deferred from "effect/Deferred"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Compactor from "../../agent/Compactor.js"
import type { BrainService } from "../../ports/Brain.js"
import type { ClawsService } from "../../ports/Claws.js"
import type * as AgentSettings from "./AgentSettings.js"
import type { HostError } from "./HostError.js"
import type { McpPool } from "./McpPool.js"
import type * as OpenFiles from "./OpenFiles.js"
import type { EventSink, Reply, Waiting } from "./TurnStream.js"
import type * as FallbackSoul from "../../memory/FallbackSoul.js"
import type { PriceTable } from "../../usage/Prices.js"

export interface Message {
  readonly text: string
  readonly channel: string
  readonly idempotencyKey?: string | undefined
}

export interface InstanceService {
  /**
   * Journals the message and queues it; the Deferred completes with its
   * reply. None once the instance stopped after a defect: ask the host again.
   * With `events`, the turn's events go there as it runs; a message answered
   * before (its Idempotency-Key) or being answered for another caller ends it at once.
   */
  readonly submit: (message: Message, events?: EventSink) => Effect.Effect<Option.Option<Deferred.Deferred<Reply>>, HostError>
  /** The messages a previous run left unanswered, being answered now. */
  readonly recovered: ReadonlyArray<Deferred.Deferred<Reply>>
  readonly compactNow: Effect.Effect<Option.Option<Compactor.CompactionReport>, Compactor.CompactionError>
  /** Waits until the mailbox's fiber has ended and the background compaction in flight, if any, has settled. */
  readonly quiet: Effect.Effect<void>
  /**
   * Once a defect stopped it: the messages it took and had not answered,
   * with their callers' Deferreds, for the next instance (`make`'s
   * `handedOver`). Taken once; nothing is added to the mailbox after.
   */
  readonly handOver: Effect.Effect<ReadonlyArray<Waiting>>
  /** Cancels the turn of the message under this Idempotency-Key (TurnCancels): whether one was running or queued. */
  readonly cancel: (key: string) => Effect.Effect<boolean>
}

/** One started agent of the host, as its LayerMap holds it. */
export class Instance extends Context.Service<Instance, InstanceService>()("planckclaw/service/AgentInstance") {}

export interface Shared {
  readonly brain: BrainService
  readonly claws: ClawsService
  /** The host's settings, under the agent's own. */
  readonly provider: ConfigProvider.ConfigProvider
  /** The host's agent settings, parsed once: those of every agent without a config.env. */
  readonly settings: AgentSettings.Settings
  /** The price table, read once by the host (an agent's config.env cannot set it). */
  readonly prices?: PriceTable | undefined
  /** The host's soul for agents without their own (its soul.md), one reader for all: its text kept once. */
  readonly defaultSoul: FallbackSoul.Reader
  readonly idempotencyKeys: number
  /** This process's owner file in PLANCKCLAW_AGENTS_DIR: the agents' locks are hard links to it (OwnerFile.ts). */
  readonly ownerFile: () => string | undefined
  /** Which agents keep their files open between messages. */
  readonly openFiles: OpenFiles.OpenFiles
  /** The brain's name in each agent's usage ledger (usage.jsonl); absent: the agents keep none. */
  readonly brainLabel?: string | undefined
  /** The MCP servers of the agents' own mcp.json, shared by the agents naming the same one (AgentMcp). */
  readonly mcpPool?: McpPool | undefined
}

/** One instance of an agent, as the host tracks it until its scope has closed. */
export interface Life {
  /** Completed once every finalizer of the instance has run (its compaction settled, its files closed). */
  readonly closed: Deferred.Deferred<void>
  /** Replaced after a defect: closes once its callers let go, which the next instance's replies allow. */
  restarting: boolean
  /** Its scope has begun to close (released when idle, or the host stopping). */
  closing: boolean
  /** Waits until the instance answers nothing more and its background compaction has ended. */
  quiet: Effect.Effect<void>
  /** What it had not answered when a defect stopped it, for the next instance (InstanceService.handOver). */
  handOver: Effect.Effect<ReadonlyArray<Waiting>>
}
