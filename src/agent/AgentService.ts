/**
 * The Agent tag and what the agent offers: what Intake needs from it. It is
 * apart from its one implementation (Agent.ts) so that Agent.ts can name
 * `Intake.run` as `Agent.serve` (contract C2) without an import cycle.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { InboundMessage, InteractService } from "../ports/Interact.js"
import type { Pending } from "../memory/Inbox.js"
import type { TurnOutcome } from "./Turn.js"

export interface AgentService {
  /** Runs one turn. Never fails: failures become replies that are not stored. */
  readonly respond: (message: InboundMessage) => Effect.Effect<TurnOutcome>
  /**
   * Takes one accepted message to the end: validates it, answers it (or
   * finishes a reply decided before a crash), remembers the exchange,
   * delivers it through `interact`, and starts a due compaction in the
   * background (the agent layer's release waits for it).
   */
  readonly handle: (message: Pending, interact: InteractService) => Effect.Effect<void>
}

export class Agent extends Context.Service<Agent, AgentService>()("planckclaw/Agent") {}
