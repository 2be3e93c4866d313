/**
 * The Agent tag and what the agent offers: what its transports (Intake's
 * pipes, serve's mailbox, the cluster's entity) need from it. It is apart
 * from its one implementation (Agent.ts) so that Agent.ts can name
 * `Intake.run` as `Agent.serve` (contract C2) without an import cycle.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type { Pending } from "../memory/Inbox.js"
import type { TurnEvent, TurnOutcome } from "./Turn.js"

export interface AgentService {
  /**
   * Answers one accepted (journaled) message: decides its reply (a turn, a
   * command, a refusal, or the reply decided before a crash), journals it
   * and remembers the exchange. The outcome says `stored: true` only once the
   * exchange is on disk (in history, or whole in the journal waiting for
   * room). None for a blank message, which gets no reply. Never fails: a
   * failure becomes a reply that is not stored. The transport delivers the
   * reply, then calls `delivered`. Interrupted before the reply is decided
   * (a cancel: the brain's request and the claws running are interrupted),
   * nothing of the message is journaled as answered or stored; once it is
   * decided, it runs to its end.
   */
  readonly respond: (message: Pending) => Effect.Effect<Option.Option<TurnOutcome>>
  /**
   * `respond` as it goes: the turn's events (its text as the model writes
   * it, each tool call and its result), then `End`, the outcome `respond`
   * would return, once remembered. A blank message ends it with no event.
   * Done with it, the transport calls `delivered` with that outcome.
   */
  readonly respondStreaming: (message: Pending) => Stream.Stream<TurnEvent>
  /**
   * The transport has delivered `respond`'s outcome (or given up on it): the
   * journal lets the message go, and a compaction due after a stored
   * exchange starts in the background (the agent layer's release waits for it).
   */
  readonly delivered: (message: Pending, outcome: Option.Option<TurnOutcome>) => Effect.Effect<void>
}

export class Agent extends Context.Service<Agent, AgentService>()("planckclaw/Agent") {}
