/**
 * A Chat Completions API stand-in on 127.0.0.1 (port 0), for tests. Each
 * request is recorded and answered by a handler that picks the reply for the
 * n-th request: a response in the shape OpenAI, Ollama or llama.cpp's server
 * document (tool calls, several per response, `length`, malformed
 * arguments), an error status in each one's error shape, a hang, a dropped
 * socket, or a reply delayed by real milliseconds.
 *
 *   const server = yield* ChatCompletionsServer.make(ChatCompletionsServer.replies(
 *     ChatCompletionsServer.toolCalls([call("call_1", "get_time", "{}")]),
 *     ChatCompletionsServer.text("It is noon.")
 *   ))
 *   // point OPENAI_BASE_URL at server.url (it ends in /v1), then:
 *   const [first] = yield* server.awaitRequests(1)
 *
 * `refusing(["max_tokens"], handler)` stands for a model that takes only
 * `max_completion_tokens`, answering as OpenAI does for the o-series and gpt-5.
 */
import { Effect, Result, type Scope } from "effect"
import * as LoopbackHttp from "./LoopbackHttp.js"
import { respond } from "./LoopbackHttp.js"

export { delay, drop, events, hang, type RecordedRequest, replies, type Reply, respond, unusedUrl } from "./LoopbackHttp.js"

/** `body` is the request parsed as JSON, `undefined` when it is not JSON. */
export type Handler = LoopbackHttp.Handler

export interface ChatCompletionsServer extends LoopbackHttp.LoopbackServer<unknown> {
  /** `http://127.0.0.1:{port}/v1`: a value for OPENAI_BASE_URL. */
  readonly url: string
  readonly host: string
}

export interface WireCall {
  readonly id?: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: unknown }
}

/** One tool call as the wire carries it: `args` is the raw arguments string (or whatever a test wants). */
export const call = (id: string | undefined, name: string, args: unknown): WireCall => ({
  ...(id !== undefined ? { id } : {}),
  type: "function",
  function: { name, arguments: args }
})

export type Flavor = "openai" | "ollama" | "llamacpp"

export interface Answer {
  readonly content?: string | null
  readonly toolCalls?: ReadonlyArray<WireCall>
  readonly finishReason?: string | null
  readonly flavor?: Flavor
}

/** A 200 answer with every field the flavor's server documents, extra ones included. */
export const completion = ({ content = null, finishReason = "stop", flavor = "openai", toolCalls }: Answer): LoopbackHttp.Reply => {
  const message = {
    role: "assistant",
    content,
    ...(toolCalls !== undefined ? { tool_calls: toolCalls } : {})
  }
  switch (flavor) {
    case "openai":
      return respond(200, {
        id: "chatcmpl-test",
        object: "chat.completion",
        created: 1700000000,
        model: "gpt-test",
        choices: [{ index: 0, message: { ...message, refusal: null, annotations: [] }, logprobs: null, finish_reason: finishReason }],
        usage: {
          prompt_tokens: 30,
          completion_tokens: 5,
          total_tokens: 35,
          prompt_tokens_details: { cached_tokens: 10, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 0 }
        },
        service_tier: "default",
        system_fingerprint: "fp_test"
      })
    case "ollama":
      return respond(200, {
        id: "chatcmpl-123",
        object: "chat.completion",
        created: 1700000000,
        model: "qwen3:8b",
        system_fingerprint: "fp_ollama",
        choices: [{ index: 0, message, finish_reason: finishReason }],
        usage: { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 }
      })
    case "llamacpp":
      return respond(200, {
        choices: [{ finish_reason: finishReason, index: 0, message: { ...message, reasoning_content: "thinking…" } }],
        created: 1700000000,
        model: "gpt-3.5-turbo",
        system_fingerprint: "b6000-abcdef",
        object: "chat.completion",
        usage: { completion_tokens: 5, prompt_tokens: 30, total_tokens: 35 },
        id: "chatcmpl-abc",
        timings: { prompt_n: 30, prompt_ms: 12.5, predicted_n: 5, predicted_ms: 40.1 }
      })
  }
}

export const text = (content: string, flavor: Flavor = "openai"): LoopbackHttp.Reply => completion({ content, flavor })

export const toolCalls = (
  calls: ReadonlyArray<WireCall>,
  options: Omit<Answer, "toolCalls"> = {}
): LoopbackHttp.Reply => completion({ finishReason: "tool_calls", ...options, toolCalls: calls })

/** An error in the shape each server documents. */
export const apiError = (status: number, message: string, flavor: Flavor = "openai", code: string | null = null): LoopbackHttp.Reply => {
  switch (flavor) {
    case "openai":
      return respond(status, { error: { message, type: "invalid_request_error", param: null, code } })
    case "ollama":
      return respond(status, { error: { message, type: "api_error", param: null, code: null } })
    case "llamacpp":
      return respond(status, { error: { code: status, message, type: status === 404 ? "not_found_error" : "server_error" } })
  }
}

/** OpenAI's own 400 for a model that does not take `field` (the o-series and gpt-5 refuse `max_tokens`). */
export const unsupportedParameter = (field: "max_tokens" | "max_completion_tokens"): LoopbackHttp.Reply => {
  const other = field === "max_tokens" ? "max_completion_tokens" : "max_tokens"
  return respond(400, {
    error: {
      message: `Unsupported parameter: '${field}' is not supported with this model. Use '${other}' instead.`,
      type: "invalid_request_error",
      param: field,
      code: "unsupported_parameter"
    }
  })
}

/**
 * A server that refuses `fields` as the real API does (`unsupportedParameter`)
 * whenever a request carries one of them, and answers the others with `handler`
 * (given the index among all requests, refused ones included).
 */
export const refusing = (fields: ReadonlyArray<"max_tokens" | "max_completion_tokens">, handler: Handler): Handler =>
(request, index) => {
  const body = request.body
  const refused = fields.find((field) => typeof body === "object" && body !== null && field in body)
  return refused === undefined ? handler(request, index) : unsupportedParameter(refused)
}

// ---------------------------------------------------------------------------
// Streamed answers (stream: true): chunks as OpenAI sends them

/** One chunk of a streamed completion: `delta` for the first choice, its finish reason once it ends. */
export const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): string =>
  `data: ${
    JSON.stringify({
      id: "chatcmpl-stream",
      object: "chat.completion.chunk",
      created: 1700000000,
      model: "gpt-test",
      system_fingerprint: "fp_test",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }]
    })
  }\n\n`

export const DONE = "data: [DONE]\n\n"

/** The last chunk when usage is asked for (stream_options.include_usage): no choices, the counts. */
export const usageChunk = (usage: Record<string, unknown> = {
  prompt_tokens: 30,
  completion_tokens: 5,
  total_tokens: 35,
  prompt_tokens_details: { cached_tokens: 10 }
}): string =>
  `data: ${JSON.stringify({ id: "chatcmpl-stream", object: "chat.completion.chunk", created: 1700000000, model: "gpt-test", choices: [], usage })}\n\n`

/** The chunks of one tool call at `index`: its id and name with empty arguments, then the arguments in two pieces. */
export const callChunks = (index: number, id: string, name: string, args: string): Array<string> => {
  const half = Math.floor(args.length / 2)
  return [
    chunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] }),
    ...[args.slice(0, half), args.slice(half)].map((piece) => chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
  ]
}

/** Every chunk of a streamed answer: the role, the text in `pieces`, the calls, the finish, the usage, [DONE]. */
export const streamChunks = (
  pieces: ReadonlyArray<string>,
  calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly args: string }> = [],
  finishReason = calls.length > 0 ? "tool_calls" : "stop"
): Array<string> => [
  chunk({ role: "assistant", content: "", refusal: null }),
  ...pieces.map((content) => chunk({ content })),
  ...calls.flatMap((call, index) => callChunks(index, call.id, call.name, call.args)),
  chunk({}, finishReason),
  usageChunk(),
  DONE
]

/** A streamed answer whose text comes in `pieces`. */
export const streamedText = (...pieces: ReadonlyArray<string>): LoopbackHttp.Reply => LoopbackHttp.events(streamChunks(pieces))

export const make = (handler: Handler): Effect.Effect<ChatCompletionsServer, LoopbackHttp.ServerError, Scope.Scope> =>
  Effect.map(
    LoopbackHttp.serve(handler, (raw) => Result.getOrUndefined(Result.try(() => JSON.parse(raw) as unknown))),
    (server) => ({ ...server, url: `http://127.0.0.1:${server.port}/v1`, host: `127.0.0.1:${server.port}` })
  )
