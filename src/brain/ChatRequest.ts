/**
 * The request half of the OpenAI Chat Completions wire (OpenAI, OpenRouter,
 * Ollama, llama.cpp's server, vLLM, LM Studio): the agent's Messages-shaped
 * request translated for it. Pure: OpenAiBrain posts and retries, and
 * ChatResponse reads the answer back.
 *
 * Tool arguments that are not a JSON object. A tool_use block's `input` is
 * always an object on the Messages API, so a call whose `arguments` do not
 * parse to an object keeps the model's raw text as a *string* input
 * (ChatResponse). The agent answers any non-object input with an `is_error`
 * tool_result ("Tool input must be a JSON object, ..."). On the next request
 * the string is sent back verbatim as that call's `arguments`, and its error
 * result is rewritten to name the bad arguments (`invalidArgumentsMessage`),
 * so the model sees what it wrote and what to do instead.
 */
import * as Result from "effect/Result"
import type { Message, MessagesRequest, ToolResultBlock, ToolSpec, ToolUseBlock } from "../ports/Brain.js"
import { preview, systemText } from "../ports/Brain.js"
import { isJsonObject } from "../runtime/Json.js"
import type { TokenField } from "./TokenField.js"

export interface ChatToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | {
    readonly role: "assistant"
    readonly content: string | null
    readonly tool_calls?: ReadonlyArray<ChatToolCall>
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

export interface ChatTool {
  readonly type: "function"
  readonly function: { readonly name: string; readonly description: string; readonly parameters: unknown }
}

/** The cap on the answer's length goes in one of two fields, as the server wants (TokenField). */
export interface ChatRequest {
  readonly model: string
  readonly max_tokens?: number
  readonly max_completion_tokens?: number
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools?: ReadonlyArray<ChatTool>
}

/** Prefix of a tool_result whose `is_error` the Chat Completions wire has no field for. */
export const TOOL_ERROR_PREFIX = "Error: "

const parseJson = (text: string): Result.Result<unknown, unknown> => Result.try(() => JSON.parse(text) as unknown)

/** What the model is told when its arguments for `name` were not a JSON object. */
export const invalidArgumentsMessage = (name: string, raw: string): string => {
  const parsed = parseJson(raw)
  const what = Result.isFailure(parsed)
    ? "are not valid JSON"
    : `are ${Array.isArray(parsed.success) ? "an array" : parsed.success === null ? "null" : `a ${typeof parsed.success}`}, not an object`
  return `${TOOL_ERROR_PREFIX}the arguments of this ${name} call ${what}: ${preview(raw, 500)}. ` +
    `Call ${name} again with its arguments as one JSON object matching its parameters schema.`
}

const argumentsOf = (input: unknown): string => typeof input === "string" ? input : JSON.stringify(input ?? {})

const textOfBlocks = (blocks: ReadonlyArray<{ readonly type: string }>): Array<string> =>
  blocks.flatMap((block) => block.type === "text" && "text" in block ? [String(block.text)] : [])

const assistantMessage = (content: Message["content"]): ChatMessage => {
  if (typeof content === "string") return { role: "assistant", content }
  const text = textOfBlocks(content).join("\n\n")
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use")
  return calls.length === 0
    ? { role: "assistant", content: text }
    : {
      role: "assistant",
      content: text === "" ? null : text,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: argumentsOf(call.input) }
      }))
    }
}

/** Tool results first (they must follow the assistant's calls), then any text as one user message. */
const userMessages = (
  content: Message["content"],
  malformed: ReadonlyMap<string, { readonly name: string; readonly raw: string }>
): Array<ChatMessage> => {
  if (typeof content === "string") return [{ role: "user", content }]
  const results = content.filter((block): block is ToolResultBlock => block.type === "tool_result")
  const text = textOfBlocks(content)
  return [
    ...results.map((result): ChatMessage => {
      const bad = malformed.get(result.tool_use_id)
      const answer = bad !== undefined && result.is_error === true
        ? invalidArgumentsMessage(bad.name, bad.raw)
        : result.is_error === true
        ? `${TOOL_ERROR_PREFIX}${result.content}`
        : result.content
      return { role: "tool", tool_call_id: result.tool_use_id, content: answer }
    }),
    ...(text.length > 0 ? [{ role: "user" as const, content: text.join("\n\n") }] : [])
  ]
}

/**
 * What one brain's conversions keep between requests: each turn resends the
 * same history messages and tool specs, so each is converted once and the
 * same ChatMessage handed out again, whose JSON KeptJson then keeps too.
 * Only what depends on nothing else in the request is kept: a tool result
 * whose call had malformed arguments is converted anew each time.
 */
export interface ChatConversions {
  readonly messages: WeakMap<Message, ReadonlyArray<ChatMessage>>
  readonly tools: WeakMap<ReadonlyArray<ToolSpec>, ReadonlyArray<ChatTool>>
}

export const chatConversions = (): ChatConversions => ({ messages: new WeakMap(), tools: new WeakMap() })

const malformedCalls = (request: MessagesRequest): Map<string, { name: string; raw: string }> => {
  // Calls whose input is not an object: their results get the invalid-arguments message.
  const malformed = new Map<string, { name: string; raw: string }>()
  for (const message of request.messages) {
    if (message.role !== "assistant" || typeof message.content === "string") continue
    for (const block of message.content) {
      if (block.type === "tool_use" && !isJsonObject(block.input)) {
        malformed.set(block.id, { name: block.name, raw: argumentsOf(block.input) })
      }
    }
  }
  return malformed
}

/** Whether a user message's conversion reads the request's malformed calls. */
const readsMalformed = (message: Message, malformed: ReadonlyMap<string, unknown>): boolean =>
  malformed.size > 0 && typeof message.content !== "string" &&
  message.content.some((block) => block.type === "tool_result" && block.is_error === true && malformed.has(block.tool_use_id))

const chatTools = (tools: ReadonlyArray<ToolSpec>): ReadonlyArray<ChatTool> =>
  tools.map((tool): ChatTool => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.input_schema }
  }))

export const toChatRequest = (
  request: MessagesRequest,
  tokenField: TokenField = "max_tokens",
  kept: ChatConversions = chatConversions()
): ChatRequest => {
  const malformed = malformedCalls(request)
  const convert = (message: Message): ReadonlyArray<ChatMessage> =>
    message.role === "assistant" ? [assistantMessage(message.content)] : userMessages(message.content, malformed)
  const system = systemText(request.system)
  const messages: Array<ChatMessage> = []
  // Cache breakpoints (cache_control) are Anthropic's: this wire drops them.
  if (system !== undefined) messages.push({ role: "system", content: system })
  for (const message of request.messages) {
    if (readsMalformed(message, malformed)) {
      messages.push(...convert(message))
      continue
    }
    let converted = kept.messages.get(message)
    if (converted === undefined) {
      converted = convert(message)
      kept.messages.set(message, converted)
    }
    messages.push(...converted)
  }
  const tools = request.tools
  let specs: ReadonlyArray<ChatTool> | undefined
  if (tools !== undefined && tools.length > 0) {
    specs = kept.tools.get(tools)
    if (specs === undefined) {
      specs = chatTools(tools)
      kept.tools.set(tools, specs)
    }
  }
  return {
    model: request.model,
    ...(tokenField === "max_tokens" ? { max_tokens: request.max_tokens } : { max_completion_tokens: request.max_tokens }),
    messages,
    // An empty list is an invalid request for OpenAI: no tools means no key.
    ...(specs !== undefined ? { tools: specs } : {})
  }
}
