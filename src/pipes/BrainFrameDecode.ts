/**
 * Reading brain frames' JSON: a request as a bridge receives it
 * (decodeBrainRequest, which keeps the fields the schema does not know), and
 * the usual answer as the agent reads it without the Schema
 * (plainBrainAnswer). Apart from BrainFrame's writing side so each reads in
 * one sitting; BrainFrame re-exports both. Pure, no I/O.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import {
  answersError,
  type MessagesRequest,
  MessagesRequest as MessagesRequestSchema,
  type MessagesResponse,
  type ResponseBlock,
  type Usage
} from "../ports/Brain.js"
import { madeOnFirstCall } from "../runtime/FirstCall.js"
import { isJsonObject } from "../runtime/Json.js"
import { MalformedMessage, excerpt } from "../runtime/Framing.js"

const decodeRequest = madeOnFirstCall(() => Schema.decodeUnknownResult(MessagesRequestSchema))
const formatIssue = madeOnFirstCall(() => SchemaIssue.makeFormatterDefault())

/**
 * The decoded value with the fields the schema does not know (temperature,
 * tool_choice, …) put back, at every depth, so they travel on untouched: the
 * unknown fields of an object first, in the input's order, then the known
 * ones in the schema's order (Effect 3's `onExcessProperty: "preserve"`,
 * which Effect 4's decoding has not: it drops them).
 */
const withExcess = (input: unknown, decoded: unknown): unknown => {
  if (Array.isArray(decoded)) {
    return Array.isArray(input) && input.length === decoded.length
      ? decoded.map((element, index) => withExcess(input[index], element))
      : decoded
  }
  if (!isJsonObject(decoded) || !isJsonObject(input) || input === decoded) return decoded
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(input)) if (!Object.prototype.hasOwnProperty.call(decoded, key)) out[key] = input[key]
  for (const key of Object.keys(decoded)) out[key] = withExcess(input[key], decoded[key])
  return out
}

/** Reads a brain request frame as a bridge receives it. */
export const decodeBrainRequest = (frame: string): Result.Result<MessagesRequest, MalformedMessage> => {
  const parsed = Result.try({
    try: () => JSON.parse(frame) as unknown,
    catch: () => new MalformedMessage({ message: `brain request is not JSON: ${excerpt(frame)}` })
  })
  return Result.flatMap(parsed, (json) =>
    Result.match(decodeRequest(json), {
      onFailure: (error) =>
        Result.fail(new MalformedMessage({ message: `brain request is not a Messages API request: ${formatIssue(error.issue)}` })),
      onSuccess: (request) => Result.succeed(withExcess(json, request) as MessagesRequest)
    }))
}

const optionalString = (value: unknown) => value === undefined || typeof value === "string"

/** A text or tool_use block, rebuilt with exactly the fields the Schema keeps; undefined for any other shape. */
const plainBlock = (block: unknown): ResponseBlock | undefined => {
  if (!isJsonObject(block)) return undefined
  if (block.type === "text" && typeof block.text === "string") return { type: "text", text: block.text }
  if (
    block.type === "tool_use" && typeof block.id === "string" && typeof block.name === "string" &&
    Object.prototype.hasOwnProperty.call(block, "input")
  ) {
    return { type: "tool_use", id: block.id, name: block.name, input: block.input }
  }
  return undefined
}

/**
 * The usual brain answer (text and tool_use blocks, string fields) read
 * without the Schema, which costs more than the rest of the FIFO round trip.
 * Builds the same value the Schema decode would (same fields, same order,
 * unknown fields dropped); undefined for anything else, error answers
 * included, which then take `decodeBrainAnswer` and its messages.
 */
export const plainBrainAnswer = (json: unknown): MessagesResponse | undefined => {
  if (!isJsonObject(json) || answersError(json) || !Array.isArray(json.content)) return undefined
  const { id, model, role, stop_reason, type } = json
  if (!optionalString(id) || !optionalString(type) || !optionalString(role) || !optionalString(model)) return undefined
  if (!optionalString(stop_reason) && stop_reason !== null) return undefined
  const usage = plainUsage(json.usage)
  if (usage === false) return undefined
  const content: Array<ResponseBlock> = []
  for (const block of json.content as ReadonlyArray<unknown>) {
    const plain = plainBlock(block)
    if (plain === undefined) return undefined
    content.push(plain)
  }
  return {
    ...(id === undefined ? {} : { id: id as string }),
    ...(type === undefined ? {} : { type: type as string }),
    ...(role === undefined ? {} : { role: role as string }),
    ...(model === undefined ? {} : { model: model as string }),
    content,
    ...(stop_reason === undefined ? {} : { stop_reason: stop_reason as string | null }),
    ...(usage === undefined ? {} : { usage })
  }
}

const usageKeys = ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"] as const

/** The token counts as the Schema keeps them (the four known keys), undefined when absent, false when odd. */
const plainUsage = (value: unknown): Usage | null | undefined | false => {
  if (value === undefined || value === null) return value
  if (!isJsonObject(value)) return false
  const usage: Record<string, number | null> = {}
  for (const key of usageKeys) {
    const count = value[key]
    if (count === undefined) continue
    if (count !== null && typeof count !== "number") return false
    usage[key] = count
  }
  return usage as Usage
}
