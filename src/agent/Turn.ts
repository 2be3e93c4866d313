/**
 * One turn: the tool loop. Given what memory holds and the user's text, it
 * discovers tools, asks the brain, runs every tool call of every round and
 * returns the reply. It depends only on the Brain and Claws ports; reading
 * memory, remembering and answering are the agent's (Agent.ts).
 *
 * With a listener (`onEvent`), a turn tells what it does as it goes: the
 * model's text as it is written (in one piece from a brain that does not
 * stream), each tool call as it starts and its result. The text a model
 * writes before its tool calls is part of the reply, before the final text.
 *
 * Spans (`Turn.run`, `Brain.complete` per round, `Claws.call` per tool call)
 * are made only when a tracer is installed, and without a stack trace: a
 * turn must cost nothing extra otherwise (Tracing.ts, the issue 11
 * profile). That is also why `run` is a plain function, not `Effect.fn`: in
 * effect 3.22 `Effect.fn` builds an Error on every call, whatever its span
 * options say.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import {
  Brain,
  type BrainError,
  type BrainService,
  type Message,
  type MessagesResponse,
  responseText,
  type TextBlock,
  type ToolResultBlock,
  type ToolUseBlock
} from "../ports/Brain.js"
import { Claws, type ClawsService, type ToolDefinition } from "../ports/Claws.js"
import { describeJsonType, isJsonObject } from "../runtime/Json.js"
import type { MemorySnapshot } from "../memory/Memory.js"
import { type PromptMemo, promptMemo } from "./Prompt.js"
import * as Tracing from "../runtime/Tracing.js"
import { isWellFormed, wellFormed, wellFormedJson } from "../runtime/WellFormed.js"
import { askBrain } from "./TurnAsk.js"
import { finalReply, stoppedAfter } from "./TurnReply.js"
import {
  type Answer,
  type ToolCallMade,
  type TurnListener,
  type TurnOutcome,
  withoutTurn
} from "./TurnOutcome.js"

export {
  type Answer,
  NO_TOOL_CALLS,
  type NotAnswered,
  NO_USAGE,
  type ToolCallMade,
  type TurnEvent,
  type TurnListener,
  type TurnOutcome,
  type TurnUsage,
  withoutTurn
} from "./TurnOutcome.js"

/** The original's words, for any turn the brain could not complete. */
export const APOLOGY = "I'm temporarily unavailable. Please try again shortly."


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
  /** Told the turn's events as they happen; none when absent. */
  readonly onEvent?: TurnListener | undefined
}

/** The answer for a turn that could not be completed; not stored. */
export const failed: TurnOutcome = withoutTurn({ reply: APOLOGY, stored: false, notAnswered: "failed" })

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

/**
 * The response with every string of its text and tool-use blocks well-formed
 * (WellFormed): the only blocks a turn echoes or replies with. Itself when
 * they were, found by a check of each text (no walk of a text block's keys).
 */
const wellFormedResponse = (response: MessagesResponse): MessagesResponse => {
  for (const block of response.content) {
    const whole = block.type === "text" && "text" in block ? isWellFormed(block.text) : block.type !== "tool_use" || wellFormedJson(block) === block
    if (!whole) return { ...response, content: wellFormedJson(response.content) }
  }
  return response
}

const errorResult = (call: ToolUseBlock, content: string): ToolResultBlock => ({
  type: "tool_result",
  tool_use_id: call.id,
  content,
  is_error: true
})

/** One tool call; every failure becomes an error result the model reads. Noted in `made`, told to `onEvent`. */
const runTool = (
  claws: ClawsService,
  call: ToolUseBlock,
  recording: boolean,
  made: Array<ToolCallMade>,
  onEvent: TurnListener | undefined
): Effect.Effect<ToolResultBlock> =>
  onEvent === undefined ? runToolQuietly(claws, call, recording, made) : Effect.andThen(
    onEvent({ _tag: "ToolCallStart", name: call.name, input: call.input }),
    Effect.flatMap(Clock.currentTimeMillis, (started) =>
      Effect.tap(runToolQuietly(claws, call, recording, made), (result) =>
        Effect.flatMap(Clock.currentTimeMillis, (ended) =>
          onEvent({ _tag: "ToolResult", name: call.name, ok: result.is_error !== true, ms: ended - started }))))
  )

const runToolQuietly = (
  claws: ClawsService,
  call: ToolUseBlock,
  recording: boolean,
  made: Array<ToolCallMade>
): Effect.Effect<ToolResultBlock> =>
  Effect.tap(Tracing.span(
    !isJsonObject(call.input)
      ? Effect.succeed(errorResult(call, `Tool input must be a JSON object, got ${describeJsonType(call.input)}`))
      : Effect.matchEffect(claws.call(call.name, call.input), {
        onFailure: (error) => Effect.succeed(errorResult(call, `Tool ${call.name} could not run: ${error.message}`)),
        onSuccess: (result) =>
          Effect.succeed<ToolResultBlock>({
            type: "tool_result",
            tool_use_id: call.id,
            // A claw bridge's result may spell a lone surrogate in JSON; the next request must not carry it.
            content: wellFormed(result.content),
            ...(result.isError ? { is_error: true } : {})
          })
      }),
    recording,
    "Claws.call",
    { tool: call.name }
  ), (result) => Effect.sync(() => void made.push({ name: call.name, ok: result.is_error !== true })))

const MISCONFIGURED = "I can't think right now: my brain is misconfigured ("

/** What the user is told when the settings keep the brain from answering (a refused key, an unknown model). */
export const misconfiguredReply = (problem: string): string => `${MISCONFIGURED}${problem}). The log says what to fix.`

const MEMORY_UNUSABLE = "I can't answer: a file of my memory is unusable ("

/**
 * What the user is told when memory keeps every turn from being answered
 * until someone fixes a file (a soul over its limit): not the apology, as
 * waiting would not help. `problem` names the file, never its path.
 */
export const memoryUnusableReply = (problem: string): string =>
  `${MEMORY_UNUSABLE}${problem}). The log names the file to fix.`

/**
 * A reply that says the brain could not answer (an outage, a setting or file
 * to fix): asking again may get an answer. Known by its words, for what
 * holds the reply's text alone (a bridge, serve's idempotency records, the
 * cluster's kept replies); a model that says the same words is taken for
 * it. Where the outcome is at hand, its `notAnswered` says it exactly.
 */
export const isFailureReply = (reply: string): boolean =>
  reply === APOLOGY || reply.startsWith(MISCONFIGURED) || reply.startsWith(MEMORY_UNUSABLE)

/**
 * A brain that gave up: the apology for what may pass (a timeout, an
 * outage), the misconfigured reply when a setting must change; the log
 * names that setting, never its value.
 */
const unavailable = (error: BrainError) =>
  error.misconfigured === undefined
    // "timeout" is the wire's word for any failure that may pass (429, 5xx, no answer): the detail says which.
    ? Effect.logWarning(`brain ${error.reason === "timeout" ? "gave up for now" : "failed"}: ${error.detail}`).pipe(Effect.as(failed))
    : Effect.logError(
      `brain is misconfigured (${error.misconfigured.problem}): fix ${error.misconfigured.setting}; ${error.detail}`
    ).pipe(Effect.as<Answer>({ reply: misconfiguredReply(error.misconfigured.problem), stored: false, notAnswered: "failed" }))

/** What a turn runs on: the two ports, and the agent's memo of what its last turn sent (see Prompt.promptMemo). */
export interface TurnPorts {
  readonly brain: BrainService
  readonly claws: ClawsService
  readonly prompt: PromptMemo
}

/**
 * Runs the tool loop to a reply. Never fails: a brain that gives up is
 * answered with the apology. Defects (a bug in a tool or brain) are the
 * caller's to catch. Composed step by step rather than with Effect.gen: the
 * plain turn is one tool listing and one brain call, and every step and
 * object saved counts on it (issue 11).
 */
export const runWith = (ports: TurnPorts, { config, onEvent, snapshot, text }: TurnInput): Effect.Effect<TurnOutcome> =>
  Effect.withFiber<TurnOutcome>((fiber) => {
    const recording = Tracing.recording(fiber)
    const cache = config.promptCache === true
    // What the turn did, noted as it goes: a brain that gives up after a tool round still made those calls.
    const toolCalls: Array<ToolCallMade> = []
    const usage = { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 }
    // What the model said before its tool calls, round by round: the reply begins with it.
    const said: Array<string> = []
    const ask = (tools: ReadonlyArray<ToolDefinition>): Effect.Effect<Answer, BrainError> => {
      const { prompt } = ports
      const messages = prompt.conversation(snapshot.history, text, cache)
      const system = prompt.systemPrompt(snapshot.soul, snapshot.summary)
      const specs = prompt.toolSpecs(tools, cache)
      // Every round's request holds this same `messages` array, which grows by each round.
      const request = () => prompt.turnRequest({ model: config.model, maxTokens: config.maxTokens, system, messages, tools, cache, specs })
      const round = (n: number): Effect.Effect<Answer, BrainError> =>
        Effect.flatMap(
          Tracing.span(askBrain(ports.brain, request(), onEvent), recording, "Brain.complete", { round: n }),
          ({ answer, told }) => {
            count(usage, answer.usage)
            // A lone surrogate in what the model said becomes U+FFFD: in the reply stored and in the next round's echo.
            const response = wellFormedResponse(answer)
            const calls = toolUsesOf(response)
            const spoken = responseText(response)
            // A brain that answered whole: its text, told in one piece.
            const tell = onEvent === undefined || told || spoken === "" ? Effect.void : onEvent({ _tag: "TextDelta", text: spoken })
            if (response.stop_reason !== "tool_use" || calls.length === 0) return Effect.as(tell, finalReply(response, said))
            if (n >= config.maxToolRounds) return Effect.as(tell, stoppedAfter(config.maxToolRounds))
            if (spoken.trim() !== "") said.push(spoken.trim())
            // Every call of the round, in order, answered in one user message.
            return Effect.andThen(
              tell,
              Effect.flatMap(Effect.forEach(calls, (call) => runTool(ports.claws, call, recording, toolCalls, onEvent)), (results) => {
                messages.push(assistantTurn(response), { role: "user", content: results })
                return round(n + 1)
              })
            )
          }
        )
      return round(0)
    }
    const turn = Effect.catch(
      Effect.matchEffect(ports.claws.list, {
        onFailure: (error) =>
          Effect.andThen(Effect.logWarning(`tool discovery failed, answering without tools: ${error.message}`), ask([])),
        onSuccess: (catalog) => ask(catalog.tools)
      }),
      unavailable
    )
    return Effect.map(
      Tracing.span(turn, recording, "Turn.run"),
      (answer): TurnOutcome =>
        answer.notAnswered === undefined
          ? { reply: answer.reply, stored: answer.stored, toolCalls, usage }
          : { reply: answer.reply, stored: answer.stored, notAnswered: answer.notAnswered, toolCalls, usage }
    )
  })

/** Adds one answer's token counts to the turn's. */
const count = (
  usage: { input: number; output: number; cacheWrite: number; cacheRead: number },
  answered: MessagesResponse["usage"]
): void => {
  if (answered === undefined || answered === null) return
  usage.input += answered.input_tokens ?? 0
  usage.output += answered.output_tokens ?? 0
  usage.cacheWrite += answered.cache_creation_input_tokens ?? 0
  usage.cacheRead += answered.cache_read_input_tokens ?? 0
}

/** `runWith` on the Brain and Claws of the context. */
export const run = (input: TurnInput): Effect.Effect<TurnOutcome, never, Brain | Claws> =>
  Effect.flatMap(Effect.context<Brain | Claws>(), (context) =>
    runWith({ brain: Context.get(context, Brain), claws: Context.get(context, Claws), prompt: promptMemo() }, input))
