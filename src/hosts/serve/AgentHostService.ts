/**
 * The host as its callers see it: the AgentHost service, its interface and results, and what
 * every implementation of it shares (refusals, agent ids, waiting for a reply). Apart from
 * AgentHost.ts, which makes this process's host, because the cluster's host implements the same
 * service and the routes only call it.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type * as IdleCollection from "../../runtime/process/IdleCollection.js"
import * as AgentId from "./AgentId.js"
import type * as AgentInstance from "./AgentInstance.js"
import type * as AgentRecords from "./AgentRecords.js"
import type * as AgentStatus from "./AgentStatus.js"
import { HostError } from "./HostError.js"
import type * as HostMessage from "./HostMessage.js"
import type * as TurnStream from "./TurnStream.js"

export interface CompactResult {
  readonly compacted: boolean
  readonly summarised: number
  readonly kept: number
  readonly summaryBytes: number
}

/** The records (history pages, usage, soul and summary, schedules): read from the files by `serve`'s host, from the database by the cluster's (ClusterRecords); a host without them answers 503. */
export interface AgentHostService extends Partial<AgentRecords.Records> {
  readonly directory: string
  /**
   * Sends a checked message to its agent (started if released, created if
   * new) and waits for its reply: what the HTTP API calls with the message
   * its Schemas decoded (HostMessage).
   */
  readonly sendChecked: (message: HostMessage.HostMessage) => Effect.Effect<AgentInstance.Reply, HostError>
  /**
   * `sendChecked` telling the turn as it goes (TurnStream.streaming: a caller gone loses nothing): it
   * succeeds once the message is taken (journaled, or stored by the cluster, which tells its reply alone).
   */
  readonly streamChecked: (message: HostMessage.HostMessage) => Effect.Effect<TurnStream.Streaming, HostError>
  /** `sendChecked` of a message given as it came (an embedder's): checked first, by HostMessage.decoder. */
  readonly send: (id: string, message: HostMessage.SendOptions) => Effect.Effect<AgentInstance.Reply, HostError>
  /**
   * `send` in two steps (Discord's routes): the message is checked as `send`
   * checks it and journaled once this succeeds, and its reply completes the
   * Deferred; the agent stays started until the reply is given, and while the scope is open.
   */
  readonly accept: (
    id: string,
    message: HostMessage.SendOptions
  ) => Effect.Effect<Deferred.Deferred<AgentInstance.Reply>, HostError, Scope.Scope>
  /** A page of the agents, in id order. */
  readonly list: (page: AgentStatus.ListPage) => Effect.Effect<AgentStatus.AgentList, HostError>
  readonly get: (id: string) => Effect.Effect<AgentStatus.AgentInfo, HostError>
  /** Compacts agent `id` now, whatever the length of its history. */
  readonly compact: (id: string) => Effect.Effect<CompactResult, HostError>
  /** Cancels agent `id`'s turn of the message under Idempotency-Key `key` (TurnCancels): whether one was running or queued. */
  readonly cancel?: (id: string, key: string) => Effect.Effect<boolean, HostError>
  /** Messages accepted and agents released so far (IdleCollection reads them). */
  readonly activity?: () => IdleCollection.Activity
}

export class AgentHost extends Context.Service<AgentHost, AgentHostService>()("planckclaw/AgentHost") {}

/** A refusal of a host, naming the agent when there is one. */
export const refuse = (reason: HostError["reason"], message: string, id?: string) =>
  Effect.fail(new HostError({ reason, message, ...(id === undefined ? {} : { id }) }))

/** An agent id from a request, or its refusal. */
export const parseId = (raw: string): Effect.Effect<AgentId.AgentId, HostError> =>
  Result.match(AgentId.parse(raw), {
    onFailure: (refused) => refuse("bad-id", refused.message, raw),
    onSuccess: Effect.succeed
  })

/**
 * A reply's wait, the caller going on once the agent's fiber lets go: Effect 4
 * resumes a Deferred's waiter at once, inside the fiber that completes it,
 * where Effect 3 resumed it later. The agent's steps after the reply that
 * need no wait (the journal's `delivered`, closing its files when idle) are
 * then done when the caller goes on, as they were.
 */
export const awaitReply = <A>(deferred: Deferred.Deferred<A>): Effect.Effect<A> =>
  Effect.flatMap(Deferred.await(deferred), (reply) => Effect.as(Effect.yieldNow, reply))
