/**
 * The agent host over HTTP (effect/http's router, served by
 * @effect/platform-node's NodeHttpServer):
 *
 * - POST /v1/agents/{id}/messages {"text","channel"?} → 200 {"reply","stored"};
 *   an Idempotency-Key header makes retries safe
 * - GET /v1/agents?limit=&after= (a page, in id order, with the `after` of the next),
 *   GET /v1/agents/{id}, POST /v1/agents/{id}/compact
 * - GET /v1/health, without auth
 *
 * With PLANCKCLAW_HTTP_TOKEN set every other route needs
 * `Authorization: Bearer <token>`, compared in constant time; without one the
 * server listens only on a loopback address. Web pages are refused either
 * way (HttpRequestChecks). Bad input is a JSON error naming what was wrong,
 * and none touches an agent's memory.
 */
import type * as http from "node:http"
import type * as http2 from "node:http2"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NetAddress from "effect/net/NetAddress"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import type { HttpServerError, ServeError } from "effect/http/HttpServerError"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { AgentConfig } from "../../config/AgentConfig.js"
import { isBlank } from "../../ports/Interact.js"
import * as Logging from "../../runtime/Logging.js"
import { AgentHost, type HostError } from "./AgentHost.js"
import * as AgentId from "./AgentId.js"
import * as AgentStatus from "./AgentStatus.js"
import * as HttpConnections from "./HttpConnections.js"
import * as HttpLimits from "./HttpLimits.js"
import { bearerMatches, HttpTokenConfig, illFormedText, isLoopback, noRoute, problem, refusedOrigin, unauthorized, unsupportedMedia } from "./HttpRequestChecks.js"

export const HttpConfig = Config.all({
  token: HttpTokenConfig,
  maxMessageBytes: Config.map(AgentConfig, (config) => config.maxMessageBytes)
})

export interface Listen {
  readonly host: string
  readonly port: number
}

export const DEFAULT_LISTEN: Listen = { host: "127.0.0.1", port: 7878 }

/** `HOST:PORT` as given to `--http` (`[::1]:7878` for IPv6). */
export const parseListen = (text: string): Result.Result<Listen, string> => {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text.trim())
  const port = match === null ? Number.NaN : Number(match[3])
  if (match === null || !(port >= 0 && port <= 65535)) {
    return Result.fail(`--http expects HOST:PORT (for example 127.0.0.1:7878 or [::1]:7878), got ${JSON.stringify(text)}`)
  }
  return Result.succeed({ host: match[1] ?? match[2]!, port })
}

/** `host:port`, an IPv6 address in brackets (as `--http` takes it). */
const hostPort = (host: string, port: number) => host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`

export { isLoopback } from "./HttpRequestChecks.js"

/** Listening on a non-loopback address without PLANCKCLAW_HTTP_TOKEN. */
export class HttpListenRefused extends Data.TaggedError("HttpListenRefused")<{
  readonly host: string
  readonly message: string
}> {}

const statusOf: Record<HostError["reason"], number> = {
  "bad-id": 400,
  "bad-input": 400,
  "too-large": 413,
  "not-found": 404,
  "unavailable": 503,
  "busy": 409,
  "failed": 502,
  "key-reused": 422,
  "no-space": 507
}
const hostProblem = (error: HostError) => Effect.succeed(problem(statusOf[error.reason], error.reason, error.message))

/** What the router fails with when no route takes the request: our 405, 400 or 404 (noRoute). */
const routerProblem = (error: HttpServerError) =>
  error.reason._tag === "RouteNotFound"
    ? Effect.succeed(noRoute(error.reason.request.method, error.reason.request.url))
    : Effect.fail(error)

const idParam = Effect.flatMap(HttpRouter.params, (params) => {
  const raw = params["id"] ?? ""
  return Result.match(AgentId.parse(raw), {
    onFailure: (refused) => Effect.fail(problem(400, "bad-id", refused.message)),
    onSuccess: Effect.succeed
  })
})

/** `?limit=&after=` of GET /v1/agents, or the problem that says what is wrong with it. */
const listPage = Effect.flatMap(HttpServerRequest.ParsedSearchParams, (query): Effect.Effect<
  AgentStatus.ListPage,
  HttpServerResponse.HttpServerResponse
> => {
  const bad = (message: string) => Effect.fail(problem(400, "bad-query", message))
  const unknown = Object.keys(query).find((name) => name !== "limit" && name !== "after")
  if (unknown !== undefined) {
    return bad(`unknown query parameter ${JSON.stringify(unknown.slice(0, 40))}; GET /v1/agents takes limit and after`)
  }
  const { after, limit } = query
  if (Array.isArray(limit) || Array.isArray(after)) return bad("limit and after may each be given once")
  const size = limit === undefined ? AgentStatus.PAGE_LIMIT_DEFAULT : /^\d{1,4}$/.test(limit) ? Number(limit) : Number.NaN
  if (!(size >= 1 && size <= AgentStatus.PAGE_LIMIT_MAX)) {
    return bad(`limit must be an integer from 1 to ${AgentStatus.PAGE_LIMIT_MAX}, got ${JSON.stringify(String(limit).slice(0, 40))}`)
  }
  if (after === undefined) return Effect.succeed({ limit: size })
  return Result.match(AgentId.parse(after), {
    onFailure: (refused) => bad(`after: ${refused.message}`),
    onSuccess: (id) => Effect.succeed({ after: id, limit: size })
  })
})

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The body as text, read only up to `limit` bytes (a chunked body may declare no length). */
const readLimited = (source: http.IncomingMessage | http2.Http2ServerRequest, limit: number) =>
  Effect.callback<Option.Option<string>, string>((resume) => {
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
      resume(Effect.succeed(Option.some(Buffer.concat(chunks).toString("utf8"))))
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

/**
 * The request's JSON body, read only up to `limit` bytes; a problem response
 * otherwise, and a 503 if `stopping` completes first (a stop does not wait
 * for a slow client's body).
 */
const readBody = (limit: number, maxMessageBytes: number, stopping: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const tooLarge = HttpServerResponse.jsonUnsafe({
      error: "too-large",
      message: `the body is over ${limit} bytes; a message may hold at most ${maxMessageBytes} bytes of text (PLANCKCLAW_MAX_MESSAGE_BYTES)`
    }, { status: 413, headers: { connection: "close" } })
    const declared = request.headers["content-length"]
    if (declared !== undefined && Number(declared) > limit) return yield* Effect.fail(tooLarge)
    const text = yield* readLimited(NodeHttpServerRequest.toIncomingMessage(request), limit).pipe(
      Effect.mapError((message) => problem(400, "bad-body", `the body could not be read: ${message}`)),
      Effect.raceFirst(Effect.andThen(stopping, Effect.fail(HttpConnections.stoppingAnswer())))
    )
    if (Option.isNone(text)) return yield* Effect.fail(tooLarge)
    const json = Result.try(() => JSON.parse(text.value) as unknown)
    if (Result.isFailure(json)) return yield* Effect.fail(problem(400, "bad-json", "the body is not JSON"))
    if (!isObject(json.success)) return yield* Effect.fail(problem(400, "bad-body", "the body must be a JSON object"))
    return json.success
  })

/**
 * The routes, over the AgentHost of the context, as a layer of routes for an
 * HttpRouter; a body still being read when `stopping` completes gets a 503.
 */
export const router = (maxMessageBytes: number, stopping: Effect.Effect<void> = Effect.never) => {
  // JSON may spell each byte of text in up to six (\u0000), plus room for the channel.
  const bodyLimit = 6 * maxMessageBytes + 4096
  return HttpRouter.addAll([
    HttpRouter.route("GET", "/v1/health", Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok" }))),
    HttpRouter.route("GET", "/v1/agents", Effect.gen(function*() {
      const page = yield* listPage
      return HttpServerResponse.jsonUnsafe(yield* (yield* AgentHost).list(page))
    })),
    HttpRouter.route("GET", "/v1/agents/:id", Effect.gen(function*() {
      const id = yield* idParam
      return HttpServerResponse.jsonUnsafe(yield* (yield* AgentHost).get(id))
    })),
    HttpRouter.route("POST", "/v1/agents/:id/compact", Effect.gen(function*() {
      const id = yield* idParam
      return HttpServerResponse.jsonUnsafe(yield* (yield* AgentHost).compact(id))
    })),
    HttpRouter.route("POST", "/v1/agents/:id/messages", Effect.gen(function*() {
      const id = yield* idParam
      const request = yield* HttpServerRequest.HttpServerRequest
      const media = unsupportedMedia(request.headers["content-type"])
      if (Option.isSome(media)) return media.value
      const body = yield* readBody(bodyLimit, maxMessageBytes, stopping)
      if (typeof body["text"] !== "string") return problem(400, "bad-body", "the body needs \"text\", a string")
      // The agent would send no reply to it (Interact.isBlank): refused here, before anything is journaled.
      if (isBlank(body["text"])) return problem(400, "bad-body", "\"text\" is blank: there is nothing to answer")
      const channel = body["channel"]
      if (channel !== undefined && typeof channel !== "string") return problem(400, "bad-body", "\"channel\" must be a string")
      const illFormed = illFormedText(body)
      if (Option.isSome(illFormed)) return illFormed.value
      const key = request.headers["idempotency-key"]
      const reply = yield* (yield* AgentHost).send(id, { text: body["text"], channel, idempotencyKey: key })
      return HttpServerResponse.jsonUnsafe(reply)
    }))
  ])
}

/**
 * The whole application: auth in front of every route but /v1/health. Its
 * router is built in the scope (closing it ends the app).
 */
export const appStoppingOn = (stopping: Effect.Effect<void>) => Effect.gen(function*() {
  const config = yield* HttpConfig
  const routes = yield* HttpRouter.toHttpEffect(router(config.maxMessageBytes, stopping))
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const refused = refusedOrigin(request.headers, Option.isNone(config.token))
    if (Option.isSome(refused)) return refused.value
    if (Option.isSome(config.token) && request.url !== "/v1/health" && !bearerMatches(request.headers["authorization"], config.token.value)) {
      return unauthorized()
    }
    return yield* routes.pipe(
      Effect.catchIf(HttpServerResponse.isHttpServerResponse, Effect.succeed),
      Effect.catchTags({ HostError: hostProblem, HttpServerError: routerProblem })
    )
  })
})

export const app = appStoppingOn(Effect.never)

/** Refuses a non-loopback address without PLANCKCLAW_HTTP_TOKEN, and limits that leave no descriptors in reserve. */
const checked = (listen: Listen): Effect.Effect<HttpLimits.Limits, HttpListenRefused | Config.ConfigError> =>
  Effect.flatMap(HttpConfig, (config): Effect.Effect<HttpLimits.Limits, HttpListenRefused | Config.ConfigError> =>
    !isLoopback(listen.host) && Option.isNone(config.token)
      ? Effect.fail(
        new HttpListenRefused({
          host: listen.host,
          message: `refusing to listen on ${listen.host}, which is not a loopback address, without PLANCKCLAW_HTTP_TOKEN: ` +
            "set a token, or listen on 127.0.0.1"
        })
      )
      : HttpLimits.read)

/**
 * What `layer` refuses (see `checked`); a command runs it first, before the
 * agent host `layer` needs is started.
 */
export const guard = (listen: Listen): Effect.Effect<void, HttpListenRefused | Config.ConfigError> => Effect.asVoid(checked(listen))

/**
 * Serves the API on `listen` (port 0: any free port; the HttpServer in the
 * output tells which), its connections held to HttpLimits (HttpConnections).
 * Refuses a non-loopback address without a token. Closing the layer's scope
 * stops it: the requests in flight get PLANCKCLAW_STOP_GRACE.
 */
export const layer = (listen: Listen): Layer.Layer<
  HttpServer.HttpServer,
  HttpListenRefused | ServeError | Config.ConfigError,
  AgentHost
> =>
  Layer.unwrap(Effect.gen(function*() {
    const limits = yield* checked(listen)
    const connections = yield* HttpConnections.make(limits)
    const served = connections.admit(yield* appStoppingOn(connections.stopping))
    const serving = Layer.effectDiscard(Effect.gen(function*() {
      // No span per request: nothing exports them here, and building one (the URL, its attributes) costs every request.
      yield* HttpServer.serveEffect(served).pipe(Effect.provideService(HttpMiddleware.TracerDisabledWhen, () => true))
      // Added after the handler, so it runs before the handler is removed: a request during the stop is answered.
      yield* Effect.addFinalizer(() => connections.stop)
      // Said once the handler is in place: a request sent on reading it is answered.
      const { address } = yield* HttpServer.HttpServer
      const where = address._tag === "UnixPathAddress" ? address.path : hostPort(NetAddress.formatIp(address.address), address.port)
      yield* Logging.toStderr(Effect.logInfo(`HTTP API on ${where}`))
    }))
    return serving.pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => connections.server, { host: listen.host, port: listen.port }))
    )
  }))
