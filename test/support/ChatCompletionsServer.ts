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
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Deferred, Effect, Either, Exit, FiberId, type Scope } from "effect"
import { AnthropicServerError as ServerError, type RecordedRequest } from "./AnthropicServer.js"

export { type RecordedRequest, unusedUrl } from "./AnthropicServer.js"

export type Reply =
  | {
    readonly _tag: "Respond"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly body: string
  }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Drop" }
  /** `reply`, after `millis` of real time. */
  | { readonly _tag: "Delay"; readonly millis: number; readonly reply: Reply }

export type Handler = (request: RecordedRequest, index: number) => Reply

export interface ChatCompletionsServer {
  /** `http://127.0.0.1:{port}/v1`: a value for OPENAI_BASE_URL. */
  readonly url: string
  readonly host: string
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  readonly awaitRequests: (count: number) => Effect.Effect<ReadonlyArray<RecordedRequest>>
}

export const respond = (status: number, body: string | object, headers: Readonly<Record<string, string>> = {}): Reply => ({
  _tag: "Respond",
  status,
  headers: { "content-type": typeof body === "string" ? "text/plain; charset=utf-8" : "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

export const hang: Reply = { _tag: "Hang" }
export const drop: Reply = { _tag: "Drop" }
export const delay = (millis: number, reply: Reply): Reply => ({ _tag: "Delay", millis, reply })

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
export const completion = ({ content = null, finishReason = "stop", flavor = "openai", toolCalls }: Answer): Reply => {
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

export const text = (content: string, flavor: Flavor = "openai"): Reply => completion({ content, flavor })

export const toolCalls = (
  calls: ReadonlyArray<WireCall>,
  options: Omit<Answer, "toolCalls"> = {}
): Reply => completion({ finishReason: "tool_calls", ...options, toolCalls: calls })

/** An error in the shape each server documents. */
export const apiError = (status: number, message: string, flavor: Flavor = "openai", code: string | null = null): Reply => {
  switch (flavor) {
    case "openai":
      return respond(status, { error: { message, type: "invalid_request_error", param: null, code } })
    case "ollama":
      return respond(status, { error: { message, type: "api_error", param: null, code: null } })
    case "llamacpp":
      return respond(status, { error: { code: status, message, type: status === 404 ? "not_found_error" : "server_error" } })
  }
}

/** Answers the n-th request with the n-th reply; requests past the end get the last one. */
export const replies = (first: Reply, ...rest: ReadonlyArray<Reply>): Handler => {
  const all = [first, ...rest]
  return (_, index) => all[Math.min(index, all.length - 1)] ?? first
}

const answer = (reply: Reply, req: Http.IncomingMessage, res: Http.ServerResponse, timers: Set<NodeJS.Timeout>): void => {
  switch (reply._tag) {
    case "Respond":
      res.writeHead(reply.status, reply.headers)
      res.end(reply.body)
      return
    case "Drop":
      req.socket.destroy()
      return
    case "Hang":
      return
    case "Delay": {
      const timer = setTimeout(() => {
        timers.delete(timer)
        answer(reply.reply, req, res, timers)
      }, reply.millis)
      timers.add(timer)
    }
  }
}

export const make = (handler: Handler): Effect.Effect<ChatCompletionsServer, ServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const recorded: Array<RecordedRequest> = []
    const arrivals: Array<Deferred.Deferred<void>> = []
    const arrival = (index: number): Deferred.Deferred<void> => {
      for (let i = arrivals.length; i <= index; i++) arrivals.push(Deferred.unsafeMake<void>(FiberId.none))
      return arrivals[index]!
    }
    const timers = new Set<NodeJS.Timeout>()

    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks).toString("utf8")
        const request: RecordedRequest = {
          method: req.method ?? "",
          path: req.url ?? "",
          headers: Object.fromEntries(
            Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value ?? ""])
          ),
          rawBody,
          body: Either.getOrUndefined(Either.try(() => JSON.parse(rawBody) as unknown))
        }
        const index = recorded.length
        recorded.push(request)
        answer(handler(request, index), req, res, timers)
        Deferred.unsafeDone(arrival(index), Exit.void)
      })
    })

    yield* Effect.acquireRelease(
      Effect.async<void, ServerError>((resume) => {
        server.once("error", (cause) => resume(Effect.fail(new ServerError({ message: "listen failed", cause }))))
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const timer of timers) clearTimeout(timer)
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )

    const { port } = server.address() as AddressInfo
    return {
      url: `http://127.0.0.1:${port}/v1`,
      host: `127.0.0.1:${port}`,
      requests: Effect.sync(() => [...recorded]),
      awaitRequests: (count) =>
        count <= 0
          ? Effect.sync(() => [...recorded])
          : Deferred.await(arrival(count - 1)).pipe(Effect.andThen(Effect.sync(() => [...recorded])))
    }
  })
