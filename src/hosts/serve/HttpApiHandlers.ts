/**
 * The HTTP API's routes (HttpApiDefinition) over the AgentHost of the
 * context, as HttpApiBuilder handlers, with the bearer token's check.
 *
 * A message's body is read here rather than by the builder: only up to its
 * limit (a chunked body may declare no length), and raced against a stop (a
 * stop does not wait for a slow client's body). It is then decoded once,
 * with the route's own Schema (HostMessage.payload) under the server's
 * limit, and the host is handed the checked message.
 */
import type * as http from "node:http"
import type * as http2 from "node:http2"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as SchemaIssue from "effect/SchemaIssue"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as OpenApi from "effect/http-api/OpenApi"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { AgentHost, type AgentHostService, type HostError } from "./AgentHost.js"
import type * as AgentInstance from "./AgentInstance.js"
import * as HttpApiAgUiHandlers from "./HttpApiAgUiHandlers.js"
import * as HttpApiRecordsHandlers from "./HttpApiRecordsHandlers.js"
import * as AgentStatus from "./AgentStatus.js"
import * as HostMessage from "./HostMessage.js"
import { Api, Authorization, type MessageEvent } from "./HttpApiDefinition.js"
import * as HttpApiDocs from "./HttpApiDocs.js"
import * as Errors from "./HttpApiErrors.js"
import { messageBodyLimit, tooLarge as tooLargeBody, utf8Text } from "./HttpBodyLimits.js"
import * as HttpConnections from "./HttpConnections.js"
import type { Told } from "./TurnStream.js"
import { credentialMatches, problem, unauthorized, unsupportedMedia } from "./HttpRequestChecks.js"
import { packageVersion } from "../../config/PackageRoot.js"

export interface Options {
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly maxMessageBytes: number
  /** Completes when a stop begins: a body still being read is then answered 503. */
  readonly stopping: Effect.Effect<void>
}

/** The body's bytes, read only up to `limit` (None past it). */
const readLimited = (source: http.IncomingMessage | http2.Http2ServerRequest, limit: number) =>
  Effect.callback<Option.Option<Buffer>, string>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes <= limit) return void chunks.push(chunk)
      // Over the limit: stop reading; the answer goes out and the connection closes after it.
      done()
      source.pause()
      resume(Effect.succeed(Option.none()))
    }
    const onEnd = () => {
      done()
      resume(Effect.succeed(Option.some(Buffer.concat(chunks))))
    }
    const onError = (error: Error) => {
      done()
      resume(Effect.fail(error.message))
    }
    const done = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    source.on("data", onData)
    source.on("end", onEnd)
    source.on("error", onError)
    return Effect.sync(done)
  })

/** What a body's Schema refused, as the API answers it: the refusal the failed check names, else a bad body. */
const refusedBody = (issue: SchemaIssue.Issue) => {
  const { message } = HostMessage.firstIssue(issue)
  switch (HostMessage.refusalOf(issue)) {
    case "too-large":
      return new Errors.PayloadTooLarge({ error: "too-large", message })
    case "bad-input":
      return new Errors.BadRequest({ error: "bad-input", message })
    default:
      return problem(400, "bad-body", message)
  }
}

/** The message a request's body carries, or the answer that says what is wrong with it. */
const readMessage = (
  request: HttpServerRequest,
  options: Options,
  decodeMessage: (body: unknown) => Result.Result<{ readonly text: string; readonly channel?: string }, Schema.SchemaError>
) =>
  Effect.gen(function*() {
    const media = unsupportedMedia(request.headers)
    if (Option.isSome(media)) return yield* Effect.fail(media.value)
    const limit = messageBodyLimit(options.maxMessageBytes)
    const tooLarge = () => tooLargeBody(limit, `a message may hold at most ${options.maxMessageBytes} bytes of text (the host's PLANCKCLAW_MAX_MESSAGE_BYTES)`)
    const declared = request.headers["content-length"]
    if (declared !== undefined && Number(declared) > limit) return yield* Effect.fail(tooLarge())
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    // A client that waits to be told to send its body (Expect: 100-continue, as curl sends with a large one) is
    // told now, as Effect's own body readers tell it; else it would wait for its own timeout, or the server's (408).
    if (!incoming.complete && request.headers["expect"]?.toLowerCase() === "100-continue") {
      NodeHttpServerRequest.toServerResponse(request).writeContinue()
    }
    const read = readLimited(incoming, limit).pipe(
      Effect.mapError((message) => problem(400, "bad-body", `the body could not be read: ${message}`))
    )
    // A body still arriving is raced against a stop; one received whole (a message's usual body, parsed
    // with its headers) cannot keep the stop waiting, and is read without the race's two fibers.
    const body = yield* incoming.complete
      ? read
      : Effect.raceFirst(read, Effect.andThen(options.stopping, Effect.failSync(HttpConnections.stoppingAnswer)))
    if (Option.isNone(body)) return yield* Effect.fail(tooLarge())
    const text = utf8Text(body.value)
    if (Result.isFailure(text)) return yield* Effect.fail(text.failure)
    const json = Result.try(() => JSON.parse(text.success) as unknown)
    if (Result.isFailure(json)) return yield* Effect.fail(problem(400, "bad-json", "the body is not JSON"))
    const message = decodeMessage(json.success)
    if (Result.isFailure(message)) return yield* Effect.fail(refusedBody(message.failure.issue))
    return message.success
  })

/** An answer made on the way (a refusal with its own headers) is the answer. */
const respond = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, HttpServerResponse.HttpServerResponse> => HttpServerResponse.isHttpServerResponse(error),
    Effect.succeed
  )

/** Whether an Accept header asks for server-sent events: text/event-stream listed, its q not 0. */
export const wantsEvents = (accept: string | undefined) =>
  accept !== undefined && accept.split(",").some((range) => {
    const [type, ...parameters] = range.split(";").map((part) => part.trim().toLowerCase())
    return type === "text/event-stream" && !parameters.some((parameter) => /^q=0(\.0*)?$/.test(parameter))
  })

/** A turn event as the stream names it (HttpApiDefinition.MessageEvent). */
const onTheWire = (event: Told): MessageEvent => {
  switch (event._tag) {
    case "TextDelta":
      return { event: "text", data: { text: event.text } }
    case "ToolCallStart":
      return { event: "tool", data: { name: event.name, input: event.input } }
    case "ToolResult":
      return { event: "tool-result", data: { name: event.name, ok: event.ok, ms: event.ms } }
  }
}

/**
 * `accepted`, the turn's events, then `end` with its reply; a refusal (before the agent took it) is answered as
 * for JSON. The host answers once the message is journaled, and `accepted` is written at once: the 200 goes out
 * with it (Node sends a response's head with its first bytes), so a client cut after it knows the message was
 * taken, rather than waiting for the turn's first event.
 */
const streamed = (host: AgentHostService, message: HostMessage.HostMessage) =>
  Effect.map(
    host.streamChecked(message),
    ({ events, reply }): Stream.Stream<MessageEvent> =>
      Stream.succeed<MessageEvent>({ event: "accepted", data: { key: message.idempotencyKey ?? null } }).pipe(
        Stream.concat(Stream.map(events, onTheWire)),
        Stream.concat(Stream.fromEffect(Effect.map(reply, (answer): MessageEvent => ({
          event: "end",
          data: { reply: answer.reply, stored: answer.stored, cancelled: answer.cancelled === true }
        }))))
      )
  )

const health = HttpApiBuilder.group(Api, "health", (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" as const })))

const agents = (options: Options) =>
  HttpApiBuilder.group(Api, "agents", Effect.fnUntraced(function*(handlers) {
    const host = yield* AgentHost
    const decodeMessage = Schema.decodeUnknownResult(HostMessage.payload(options.maxMessageBytes))
    return handlers
      .handle("list", ({ query }) =>
        Effect.catch(
          host.list({ limit: query.limit === undefined ? AgentStatus.PAGE_LIMIT_DEFAULT : Number(query.limit), after: query.after, search: query.search }),
          Errors.fromHostAmong(Errors.ListErrors)
        ))
      .handle("get", ({ params }) => Effect.catch(host.get(params.id), Errors.fromHostAmong(Errors.GetErrors)))
      .handle("cancel", ({ headers, params }) =>
        host.cancel === undefined
          ? Effect.fail(new Errors.ServiceUnavailable({ error: "unavailable", message: "this host cannot cancel a turn" }))
          : Effect.catch(Effect.map(host.cancel(params.id, headers["idempotency-key"]), (cancelled) => ({ cancelled })), Errors.fromHostAmong(Errors.GetErrors)))
      .handle("compact", ({ params }) => Effect.catch(host.compact(params.id), Errors.fromHostAmong(Errors.CompactErrors)))
      // Raw: the body is read and decoded by readMessage (see the module comment).
      .handleRaw("send", ({ headers, params, request }) =>
        readMessage(request, options, decodeMessage).pipe(
          Effect.flatMap((body) => {
            const message = HostMessage.ofCheckedParts(params.id, body, headers["idempotency-key"])
            const answer: Effect.Effect<AgentInstance.Reply | Stream.Stream<MessageEvent>, HostError> = wantsEvents(headers.accept)
              ? streamed(host, message)
              : host.sendChecked(message)
            return Effect.catch(
              answer,
              Errors.fromHostAmong(Errors.SendErrors)
            )
          }),
          respond
        ))
  }))

const docs = HttpApiBuilder.group(Api, "docs", (handlers) => {
  // Made once, on the first request for it.
  let spec: OpenApi.OpenAPISpec | undefined
  let document: HttpServerResponse.HttpServerResponse | undefined
  let reference: HttpServerResponse.HttpServerResponse | undefined
  // Versioned as the package is (effect's default would say 0.0.1), as the MCP routes' serverInfo is.
  const specOnce = () => {
    if (spec !== undefined) return spec
    const made = OpenApi.fromApi(Api)
    return spec = { ...made, info: { ...made.info, version: packageVersion() } }
  }
  return handlers
    .handle("openapi", () => Effect.sync(() => document ??= HttpServerResponse.jsonUnsafe(specOnce())))
    .handle("reference", () => Effect.sync(() => reference ??= HttpApiDocs.response(specOnce())))
})

/** The token's check: without PLANCKCLAW_HTTP_TOKEN every request passes; with it, a 401 unless it is the bearer. */
const authorization = (token: Options["token"]) =>
  Layer.succeed(Authorization, {
    bearer: (effect, { credential }) =>
      Option.isNone(token) || credentialMatches(credential, token.value) ? effect : Effect.succeed(unauthorized())
  })

/** The API's routes, for an HttpRouter. */
export const layer = (options: Options) =>
  HttpApiBuilder.layer(Api).pipe(
    Layer.provide(
      Layer.mergeAll(health, agents(options), HttpApiRecordsHandlers.group, HttpApiAgUiHandlers.group(options), docs).pipe(
        Layer.provideMerge(Layer.merge(authorization(options.token), HttpApiAgUiHandlers.runBody(options)))
      )
    )
  )
