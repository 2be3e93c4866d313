/**
 * What a turn gives: its outcome (the reply, whether it is stored, the tool
 * calls, the tokens), and the events it tells a listener as it goes.
 */
import type * as Effect from "effect/Effect"

/**
 * Why a reply is not an answer: "failed" when the agent could not answer
 * (the apology, a brain setting or memory file to fix), "refused" when it
 * would not process the message (too large, a lone surrogate, control
 * characters alone).
 */
export type NotAnswered = "failed" | "refused"

/** A reply, and whether the exchange belongs in history (failed turns store nothing). */
export interface Answer {
  readonly reply: string
  readonly stored: boolean
  /**
   * Set where a reply that is no answer is made, so that a host holding
   * the outcome need not know it by its words (a model may say them too).
   * Absent for an answer: the model's, whatever it says, or a command's.
   */
  readonly notAnswered?: NotAnswered
}

/** One tool call a turn made: the tool's name, and whether it gave a result (not an error). */
export interface ToolCallMade {
  readonly name: string
  readonly ok: boolean
}

/** The tokens a turn's brain answers counted, summed over its rounds (0 where a brain sends none). */
export interface TurnUsage {
  readonly input: number
  readonly output: number
  readonly cacheWrite: number
  readonly cacheRead: number
}

/**
 * What a message came to: its reply, whether the exchange is stored (once
 * the agent has answered it: on disk), the tool calls its turn made and the
 * tokens it used. A reply that needed no brain (a command, a refusal) made
 * no tool calls and used nothing.
 */
export interface TurnOutcome extends Answer {
  readonly toolCalls: ReadonlyArray<ToolCallMade>
  readonly usage: TurnUsage
}

export const NO_TOOL_CALLS: ReadonlyArray<ToolCallMade> = Object.freeze([])
export const NO_USAGE: TurnUsage = Object.freeze({ input: 0, output: 0, cacheWrite: 0, cacheRead: 0 })

/** The outcome of an answer that needed no brain. */
export const withoutTurn = (answer: Answer): TurnOutcome => ({ ...answer, toolCalls: NO_TOOL_CALLS, usage: NO_USAGE })

/**
 * What a turn tells a listener as it goes: the model's text as it is written,
 * a tool call starting (its name and input) and its result (whether it gave
 * one, not an error, and how long it took). The agent ends the events with
 * `End`: the outcome, once it is remembered.
 */
export type TurnEvent =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ToolCallStart"; readonly name: string; readonly input: unknown }
  | { readonly _tag: "ToolResult"; readonly name: string; readonly ok: boolean; readonly ms: number }
  | ({ readonly _tag: "End" } & TurnOutcome)

/** Hears a turn's events; it slows the turn down as long as it takes. */
export type TurnListener = (event: TurnEvent) => Effect.Effect<void>
