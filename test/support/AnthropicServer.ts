/**
 * A small Anthropic Messages API stand-in on 127.0.0.1 (port 0), for tests.
 * Each request is recorded (method, path, headers, raw and parsed body) and
 * answered by a handler that chooses the reply for the n-th request: a status
 * with headers and body, a connection that hangs until the server closes, or
 * a dropped socket.
 *
 *   const server = yield* AnthropicServer.make(AnthropicServer.replies(
 *     AnthropicServer.apiError(529, "overloaded_error", "Overloaded"),
 *     AnthropicServer.text("Hello!")
 *   ))
 *   // point ANTHROPIC_BASE_URL at server.url, then:
 *   const [first] = yield* server.awaitRequests(1)
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Data, Deferred, Effect, Either, Exit, FiberId, type Scope } from "effect"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  /** Lower-case names, as Node reports them. */
  readonly headers: Readonly<Record<string, string>>
  readonly rawBody: string
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  readonly body: unknown
}

export type Reply =
  | {
    readonly _tag: "Respond"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly body: string
  }
  /** Never answer; the connection stays open until the client gives up or the server closes. */
  | { readonly _tag: "Hang" }
  /** Destroy the socket without answering. */
  | { readonly _tag: "Drop" }

/** Chooses the reply to the request numbered `index` (0 for the first request). */
export type Handler = (request: RecordedRequest, index: number) => Reply

export interface AnthropicServer {
  /** `http://127.0.0.1:{port}`, without a trailing slash: a value for ANTHROPIC_BASE_URL. */
  readonly url: string
  /** Every request received so far, in arrival order. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Waits until at least `count` requests have arrived, then returns all of them. */
  readonly awaitRequests: (count: number) => Effect.Effect<ReadonlyArray<RecordedRequest>>
}

export class AnthropicServerError extends Data.TaggedError("AnthropicServerError")<{
  readonly message: string
  readonly cause: unknown
}> {}

export const respond = (
  status: number,
  body: string | object,
  headers: Readonly<Record<string, string>> = {}
): Reply => ({
  _tag: "Respond",
  status,
  headers: typeof body === "string"
    ? { "content-type": "text/plain; charset=utf-8", ...headers }
    : { "content-type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

/** A 200 Messages API answer whose content is one text block. */
export const text = (reply: string): Reply =>
  respond(200, {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model: "claude-test",
    content: [{ type: "text", text: reply }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 }
  })

/** An error answer shaped like the real API's: `{"type":"error","error":{"type","message"}}`. */
export const apiError = (
  status: number,
  type: string,
  message: string,
  headers: Readonly<Record<string, string>> = {}
): Reply => respond(status, { type: "error", error: { type, message } }, headers)

export const hang: Reply = { _tag: "Hang" }
export const drop: Reply = { _tag: "Drop" }

/** Answers the n-th request with the n-th reply; requests past the end get the last one. */
export const replies = (first: Reply, ...rest: ReadonlyArray<Reply>): Handler => {
  const all = [first, ...rest]
  return (_, index) => all[Math.min(index, all.length - 1)] ?? first
}

export const make = (handler: Handler): Effect.Effect<AnthropicServer, AnthropicServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const recorded: Array<RecordedRequest> = []
    // arrivals[i] completes when request i has been recorded.
    const arrivals: Array<Deferred.Deferred<void>> = []
    const arrival = (index: number): Deferred.Deferred<void> => {
      for (let i = arrivals.length; i <= index; i++) arrivals.push(Deferred.unsafeMake<void>(FiberId.none))
      return arrivals[index]!
    }

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
          body: parseJson(rawBody)
        }
        const index = recorded.length
        recorded.push(request)
        const reply = handler(request, index)
        switch (reply._tag) {
          case "Respond":
            res.writeHead(reply.status, reply.headers)
            res.end(reply.body)
            break
          case "Drop":
            req.socket.destroy()
            break
          case "Hang":
            break
        }
        Deferred.unsafeDone(arrival(index), Exit.void)
      })
    })

    yield* Effect.acquireRelease(
      Effect.async<void, AnthropicServerError>((resume) => {
        server.once("error", (cause) => resume(Effect.fail(new AnthropicServerError({ message: "listen failed", cause }))))
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          // Hanging requests keep their sockets open; close them or close() never returns.
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )

    const { port } = server.address() as AddressInfo
    return {
      url: `http://127.0.0.1:${port}`,
      requests: Effect.sync(() => [...recorded]),
      awaitRequests: (count) =>
        count <= 0
          ? Effect.sync(() => [...recorded])
          : Deferred.await(arrival(count - 1)).pipe(Effect.andThen(Effect.sync(() => [...recorded])))
    }
  })

/**
 * A loopback URL on which nothing listens (a port bound and released), for
 * "connection refused".
 */
export const unusedUrl: Effect.Effect<string, AnthropicServerError> = Effect.async((resume) => {
  const probe = Http.createServer()
  probe.once("error", (cause) => resume(Effect.fail(new AnthropicServerError({ message: "listen failed", cause }))))
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as AddressInfo
    probe.close(() => resume(Effect.succeed(`http://127.0.0.1:${port}`)))
  })
})

const parseJson = (raw: string): unknown => Either.getOrUndefined(Either.try(() => JSON.parse(raw) as unknown))
