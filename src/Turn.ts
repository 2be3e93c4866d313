/**
 * One turn: the tool loop. Given what memory holds and the user's text, it
 * discovers tools, asks the brain, runs every tool call of every round and
 * returns the reply. It depends only on the Brain and Claws ports; reading
 * memory, remembering and answering are the agent's (Agent.ts).
 *
 * Spans (`Turn.run`, `Brain.complete` per round, `Claws.call` per tool call)
 * are made without a stack trace: a turn must cost nothing extra when no
 * tracer is installed (the issue 11 profile). That is also why `run` is a
 * plain function with `withSpan`, not `Effect.fn`: in effect 3.22 `Effect.fn`
 * builds an Error on every call, whatever its span options say.
 */
import * as Effect from "effect/Effect"
import {
  Brain,
  type BrainError,
  type Message,
  type MessagesResponse,
  responseText,
  type TextBlock,
  type ToolResultBlock,
  type ToolUseBlock
} from "./Brain.js"
import { Claws, type ToolDefinition } from "./Claws.js"
import { describeJsonType, isJsonObject } from "./Json.js"
import type { MemorySnapshot } from "./memory/Memory.js"
import { conversation, systemPrompt, turnRequest } from "./Prompt.js"

/** The original's words, for any turn the brain could not complete. */
export const APOLOGY = "I'm temporarily unavailable. Please try again shortly."

/** A turn's reply, and whether the exchange belongs in history (failed turns store nothing). */
export interface TurnOutcome {
  readonly reply: string
  readonly stored: boolean
}

/** The slice of AgentConfig a turn reads. */
export interface TurnConfig {
  readonly model: string
  readonly maxTokens: number
  readonly maxToolRounds: number
  /** Prompt-caching breakpoints (PLANCKCLAW_PROMPT_CACHE); off when absent. */
  readonly promptCache?: boolean
}

export interface TurnInput {
  readonly snapshot: MemorySnapshot
  /** The user's message, already sanitized. */
  readonly text: string
  readonly config: TurnConfig
}

/** The answer for a turn that could not be completed; not stored. */
export const failed: TurnOutcome = { reply: APOLOGY, stored: false }

const toolUsesOf = (response: MessagesResponse): Array<ToolUseBlock> =>
  response.content.filter((block): block is ToolUseBlock => block.type === "tool_use" && "id" in block)

/** What the assistant said, as it must be echoed back in the next round. */
const assistantTurn = (response: MessagesResponse): Message => ({
  role: "assistant",
  content: response.content.flatMap((block): Array<TextBlock | ToolUseBlock> =>
    block.type === "tool_use" && "id" in block
      ? [block as ToolUseBlock]
      : block.type === "text" && "text" in block
      ? [{ type: "text" as const, text: block.text }]
      : []
  )
})

const finalReply = (response: MessagesResponse): TurnOutcome => {
  const text = responseText(response).trim()
  const cut = response.stop_reason === "max_tokens"
  if (text.length === 0) {
    return {
      stored: false,
      reply: cut
        ? "My answer was cut off before I could write anything (the model hit its token limit)."
        : "I have no answer to that (the model returned an empty reply). Please try rephrasing."
    }
  }
  return { stored: true, reply: cut ? `${text}\n\n[answer cut short: the model hit its token limit]` : text }
}

const discoverTools = Effect.flatMap(Claws, (claws) => claws.list).pipe(
  Effect.map((catalog) => catalog.tools),
  Effect.catchAll((error) =>
    Effect.logWarning(`tool discovery failed, answering without tools: ${error.message}`).pipe(
      Effect.as<ReadonlyArray<ToolDefinition>>([])
    )
  )
)

const errorResult = (call: ToolUseBlock, content: string): ToolResultBlock => ({
  type: "tool_result",
  tool_use_id: call.id,
  content,
  is_error: true
})

/** One tool call; every failure becomes an error result the model reads. */
const runTool = (call: ToolUseBlock): Effect.Effect<ToolResultBlock, never, Claws> =>
  (!isJsonObject(call.input)
    ? Effect.succeed(errorResult(call, `Tool input must be a JSON object, got ${describeJsonType(call.input)}`))
    : Effect.flatMap(Claws, (claws) => claws.call(call.name, call.input)).pipe(
      Effect.map((result): ToolResultBlock => ({
        type: "tool_result",
        tool_use_id: call.id,
        content: result.content,
        ...(result.isError ? { is_error: true } : {})
      })),
      Effect.catchAll((error) => Effect.succeed(errorResult(call, `Tool ${call.name} could not run: ${error.message}`)))
    )).pipe(Effect.withSpan("Claws.call", { attributes: { tool: call.name }, captureStackTrace: false }))

/** What the user is told when the settings keep the brain from answering (a refused key, an unknown model). */
export const misconfiguredReply = (problem: string): string =>
  `I can't think right now: my brain is misconfigured (${problem}). The log says what to fix.`

/**
 * A brain that gave up: the apology for what may pass (a timeout, an
 * outage), the misconfigured reply when a setting must change; the log
 * names that setting, never its value.
 */
const unavailable = (error: BrainError) =>
  error.misconfigured === undefined
    ? Effect.logWarning(`brain gave up (${error.reason}): ${error.detail}`).pipe(Effect.as(failed))
    : Effect.logError(
      `brain is misconfigured (${error.misconfigured.problem}): fix ${error.misconfigured.setting}; ${error.detail}`
    ).pipe(Effect.as<TurnOutcome>({ reply: misconfiguredReply(error.misconfigured.problem), stored: false }))

/**
 * Runs the tool loop to a reply. Never fails: a brain that gives up is
 * answered with the apology. Defects (a bug in a tool or brain) are the
 * caller's to catch.
 */
export const run = ({ config, snapshot, text }: TurnInput): Effect.Effect<TurnOutcome, never, Brain | Claws> =>
  Effect.gen(function*() {
    const brain = yield* Brain
    const tools = yield* discoverTools
    const cache = config.promptCache === true
    const messages = conversation(snapshot.history, text, cache)
    const request = (current: ReadonlyArray<Message>) =>
      turnRequest({
        model: config.model,
        maxTokens: config.maxTokens,
        system: systemPrompt(snapshot.soul, snapshot.summary),
        messages: current,
        tools,
        cache
      })

    for (let round = 0;; round++) {
      const response = yield* brain.complete(request(messages)).pipe(
        Effect.withSpan("Brain.complete", { attributes: { round }, captureStackTrace: false })
      )
      const calls = toolUsesOf(response)
      if (response.stop_reason !== "tool_use" || calls.length === 0) return finalReply(response)
      if (round >= config.maxToolRounds) {
        return {
          stored: false,
          reply: `I stopped after ${config.maxToolRounds} rounds of tool calls without reaching an answer. ` +
            "Please try again, perhaps with a narrower question."
        } satisfies TurnOutcome
      }
      // Every call of the round, in order, answered in one user message.
      const results = yield* Effect.forEach(calls, runTool)
      messages.push(assistantTurn(response), { role: "user", content: results })
    }
  }).pipe(
    Effect.catchTag("BrainError", unavailable),
    Effect.withSpan("Turn.run", { captureStackTrace: false })
  )
