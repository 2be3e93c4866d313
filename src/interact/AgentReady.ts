/**
 * A run's word that its agent can take a message: the agent's layers are
 * built (memory open, inbox recovered, its ends of the pipes open). The
 * terminal shows its hint and first prompt only then, so nobody is invited
 * to type while a start-up step that can still fail is pending. A terminal
 * bridge without it (a bridge process joining a running agent, the tests)
 * prompts at once.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export class AgentReady extends Context.Service<AgentReady, Deferred.Deferred<void>>()("planckclaw/AgentReady") {}

/** A fresh, not yet completed signal for one run. */
export const layer: Layer.Layer<AgentReady> = Layer.effect(AgentReady, Deferred.make<void>())

/** Completes the run's signal: the agent can take a message. */
export const signal: Effect.Effect<void, never, AgentReady> = Effect.flatMap(AgentReady, (ready) => Deferred.succeed(ready, undefined))
