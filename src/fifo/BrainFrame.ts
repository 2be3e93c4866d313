/**
 * brain_in / brain_out: one compact JSON document, then an empty line; a
 * bridge that gives up answers `{"error":"timeout"|"fatal"}`. Pure codec.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import {
  type MessagesRequest,
  MessagesRequest as MessagesRequestSchema,
  type MessagesResponse,
  type Misconfigured,
  type ResponseBlock,
  type Usage
} from "../Brain.js"
import { isJsonObject } from "../Json.js"
import { MalformedMessage, compactJson, excerpt } from "./Framing.js"

/** Compact single-line JSON, then the empty line that ends a brain frame. */
export const encodeBrainFrame = (value: unknown): Either.Either<string, MalformedMessage> =>
  Either.map(compactJson(value), (json) => `${json}\n\n`)

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== "function"
}

/** The last array written under one key: its elements, as they were then, and each one's JSON. */
interface KeptArray {
  readonly items: ReadonlyArray<unknown>
  readonly parts: ReadonlyArray<string>
}

/**
 * The agent's request frames, assembled from pieces kept between requests:
 * the JSON of each element of a top-level array (each message, each tool
 * spec) and of each top-level string by key while it is equal. A turn
 * resends the same history messages and tool specs (Prompt keeps their
 * identity), so most of the request's JSON is made once. The bytes are
 * exactly `encodeBrainFrame`'s. Its caller's contract: a request's objects
 * are never modified once made (Prompt's and Turn's are not; an array may
 * grow, as a tool round's messages do); a value outside plain JSON data
 * (toJSON, class instances) takes `encodeBrainFrame` whole.
 *
 * An array is first matched against the one sent last under its key: the
 * history window slides (or grows) from one turn to the next, so the new
 * array usually begins with a run of the last one's elements, then new
 * ones. The run reuses its JSON without a lookup per element; an array
 * whose first element was not in the last one looks each element up by
 * identity.
 */
export const makeRequestFrameEncoder = (): ((request: MessagesRequest) => Either.Either<string, MalformedMessage>) => {
  const elements = new WeakMap<object, string>()
  const strings = new Map<string, { readonly value: string; readonly json: string }>()
  const arrays = new Map<string, KeptArray>()
  /** JSON of an element never seen: undefined for one that only `encodeBrainFrame` may write. */
  const freshJson = (element: unknown): string | undefined => {
    if (!isPlainObject(element)) {
      // Inside an array JSON writes undefined, functions and symbols as null.
      if (element === undefined || typeof element === "function" || typeof element === "symbol") return "null"
      return Array.isArray(element) || (typeof element === "object" && element !== null) ? undefined : JSON.stringify(element)
    }
    return JSON.stringify(element)
  }
  const elementJson = (element: unknown): string | undefined => {
    if (typeof element !== "object" || element === null) return freshJson(element)
    let json = elements.get(element)
    if (json === undefined) {
      json = freshJson(element)
      if (json !== undefined) elements.set(element, json)
    }
    return json
  }
  /**
   * The parts of `value`, reusing the kept array's for the run of elements
   * `value` begins with, found where its first element was; the elements
   * after that run are new (the new user message, the lines just stored).
   * Undefined when the first element was not in the kept array.
   */
  const continued = (kept: KeptArray, value: ReadonlyArray<unknown>): Array<string> | undefined => {
    const from = value.length === 0 ? -1 : kept.items.indexOf(value[0])
    if (from < 0) return undefined
    const most = Math.min(kept.items.length - from, value.length)
    let run = 1
    while (run < most && value[run] === kept.items[from + run]) run++
    const parts = kept.parts.slice(from, from + run)
    for (let i = run; i < value.length; i++) {
      const json = freshJson(value[i])
      if (json === undefined) return undefined
      parts.push(json)
    }
    return parts
  }
  const arrayJson = (key: string, value: ReadonlyArray<unknown>): string | undefined => {
    const kept = arrays.get(key)
    let parts = kept === undefined ? undefined : continued(kept, value)
    if (parts === undefined) {
      parts = []
      for (let i = 0; i < value.length; i++) {
        const json = elementJson(value[i])
        if (json === undefined) return undefined
        parts.push(json)
      }
    }
    // A copy: the caller's array may grow (a tool round) before the next request.
    arrays.set(key, { items: value.slice(), parts })
    return `[${parts.join(",")}]`
  }
  const valueJson = (key: string, value: unknown): string | undefined => {
    if (typeof value === "string") {
      const kept = strings.get(key)
      if (kept !== undefined && kept.value === value) return kept.json
      const json = JSON.stringify(value)
      strings.set(key, { value, json })
      return json
    }
    if (!Array.isArray(value)) return isPlainObject(value) || typeof value !== "object" ? JSON.stringify(value) : undefined
    return arrayJson(key, value)
  }
  const assemble = (request: unknown): string | undefined => {
    if (!isPlainObject(request)) return undefined
    const fields: Array<string> = []
    for (const key of Object.keys(request)) {
      const value = request[key]
      // Left out by JSON, as JSON.stringify leaves them out.
      if (value === undefined || typeof value === "function" || typeof value === "symbol") continue
      const json = valueJson(key, value)
      if (json === undefined) return undefined
      fields.push(`${JSON.stringify(key)}:${json}`)
    }
    return `{${fields.join(",")}}`
  }
  return (request) => {
    // Anything JSON cannot write (a cycle, a BigInt) gets encodeBrainFrame's error.
    const assembled = Either.try(() => assemble(request))
    return Either.isRight(assembled) && assembled.right !== undefined
      ? Either.right(`${assembled.right}\n\n`)
      : encodeBrainFrame(request)
  }
}

/**
 * What a brain bridge answers when it gives up. A failure caused by the
 * settings adds `misconfigured` ({problem, setting}, never a value) beside
 * `error`: any root-level `error` key means failure, so an older agent reads
 * it as a plain fatal answer.
 */
export const brainErrorFrame = (reason: "timeout" | "fatal", misconfigured?: Misconfigured): string =>
  misconfigured === undefined
    ? `{"error":"${reason}"}\n\n`
    : `${JSON.stringify({ error: reason, misconfigured: { problem: misconfigured.problem, setting: misconfigured.setting } })}\n\n`

// Fields the schema does not know (temperature, tool_choice, …) travel on untouched.
const decodeRequest = Schema.decodeUnknownEither(MessagesRequestSchema, { onExcessProperty: "preserve" })

/** Reads a brain request frame as a bridge receives it. */
export const decodeBrainRequest = (frame: string): Either.Either<MessagesRequest, MalformedMessage> => {
  const parsed = Either.try({
    try: () => JSON.parse(frame) as unknown,
    catch: () => new MalformedMessage({ message: `brain request is not JSON: ${excerpt(frame)}` })
  })
  return Either.flatMap(parsed, (json) =>
    Either.mapLeft(decodeRequest(json), (error) =>
      new MalformedMessage({
        message: `brain request is not a Messages API request: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
      })))
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
  if (!isJsonObject(json) || "error" in json || !Array.isArray(json.content)) return undefined
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
