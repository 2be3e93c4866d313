/**
 * The agent host over HTTP: the HttpApi of HttpApiDefinition (routes,
 * Schemas, errors, token; its OpenAPI document at GET /v1/openapi.json and
 * a page of it at GET /v1/docs), served by @effect/platform-node's
 * NodeHttpServer:
 *
 * - POST /v1/agents/{id}/messages {"text","channel"?} → 200 {"reply","stored"};
 *   an Idempotency-Key header makes retries safe
 * - GET /v1/agents?limit=&after= (a page, in id order, with the `after` of the next),
 *   GET /v1/agents/{id}, POST /v1/agents/{id}/compact
 * - GET /v1/health, without auth; GET /v1/openapi.json, GET /v1/docs
 * - POST /v1/mcp: the claws and ask_agent over MCP (McpRoute), its body held
 *   to its limit (HttpBodyLimits) before McpServer reads it
 *
 * With PLANCKCLAW_HTTP_TOKEN set every other route needs
 * `Authorization: Bearer <token>`, compared in constant time; without one the
 * server listens only on a loopback address. Web pages are refused either
 * way (HttpRequestChecks). Bad input is a JSON error naming what was wrong,
 * and none touches an agent's memory.
 */
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as NetAddress from "effect/net/NetAddress"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import type { HttpServerError, ServeError } from "effect/http/HttpServerError"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { AgentConfig } from "../../config/AgentConfig.js"
import { switchOf } from "../../config/ConfigRange.js"
import { WebConsole as WebConsoleSetting } from "../../config/settings/Serve.js"
import { Claws, OfferedClaws } from "../../ports/Claws.js"
import * as Logging from "../../runtime/Logging.js"
import type { AgentHost } from "./AgentHost.js"
import * as HttpApiHandlers from "./HttpApiHandlers.js"
import * as HttpBodyLimits from "./HttpBodyLimits.js"
import * as HttpConnections from "./HttpConnections.js"
import * as HttpLimits from "./HttpLimits.js"
import * as WebConsole from "./WebConsole.js"
import { bearerMatches, HttpTokenConfig, isLoopback, noRoute, refusedOrigin, schemaProblem, unauthorized } from "./HttpRequestChecks.js"

export const HttpConfig = Config.all({
  token: HttpTokenConfig,
  console: switchOf(WebConsoleSetting),
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

/** What the router fails with when no route takes the request: our 405, 400 or 404 (noRoute), behind the token. */
const routerProblem = (token: Option.Option<Redacted.Redacted<string>>) => (error: HttpServerError) => {
  if (error.reason._tag !== "RouteNotFound") return Effect.fail(error)
  const { request } = error.reason
  if (Option.isSome(token) && !bearerMatches(request.headers["authorization"], token.value)) return Effect.succeed(unauthorized())
  return Effect.succeed(noRoute(request.method, request.url))
}

/** What a route's Schemas refused (its id, query or a header) is a defect of the builder's: answered with what was wrong. */
const schemaProblemOf = (defect: unknown) =>
  HttpApiSchemaError.is(defect) ? Effect.succeed(schemaProblem(defect)) : Effect.die(defect)

/** The built console, or a warning saying why `/` serves none (the API is served either way). */
const consoleOrWarning = Effect.suspend(() =>
  Result.match(WebConsole.load(), {
    onFailure: (why) => Effect.as(Logging.toStderr(Effect.logWarning(`no web console at /: ${why}`)), undefined),
    onSuccess: (served) => Effect.succeed(served)
  })
)

/**
 * The whole application: the routes of HttpApiDefinition (HttpApiHandlers),
 * web pages refused in front of them (HttpRequestChecks) but the console's own (WebConsole, at /). Its router is built
 * in the scope (closing it ends the app); a body still being read when
 * `stopping` completes gets a 503.
 */
export const appStoppingOn = (stopping: Effect.Effect<void>) => Effect.gen(function*() {
  const config = yield* HttpConfig
  const routes = yield* HttpRouter.toHttpEffect(
    HttpApiHandlers.layer({ token: config.token, maxMessageBytes: config.maxMessageBytes, stopping }).pipe(
      Layer.provide(HttpServer.layerServices)
    )
  )
  const noRoute = routerProblem(config.token)
  const webConsole = config.console ? yield* consoleOrWarning : undefined
  const mcpBody = HttpBodyLimits.limited(
    HttpBodyLimits.mcpBodyLimit(config.maxMessageBytes),
    `an MCP request may be as large as a message's body: 6 × PLANCKCLAW_MAX_MESSAGE_BYTES (${config.maxMessageBytes}) + 4096 bytes`
  )
  // POST /v1/mcp (McpRoute), loaded here: effect/ai's server is no part of the other commands' start.
  // It offers the claws it finds now: the scripts alone where the host has them apart (OfferedClaws),
  // as listing the MCP servers' tools would start them and wait for them before serve listens.
  const offered = yield* Effect.serviceOption(OfferedClaws)
  const mcp = yield* Effect.flatMap(Effect.promise(() => import("./McpRoute.js")), (route) =>
    Effect.map(
      Option.isSome(offered) ? Effect.provideService(route.make, Claws, offered.value) : route.make,
      (handler) => ({ isMcpUrl: route.isMcpUrl, handler })
    ))
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    // The console's files hold nothing secret: served to anyone, the page then asks for the token.
    const page = webConsole?.answer(request.method, request.url)
    if (page !== undefined && Option.isSome(page)) return page.value
    const refused = refusedOrigin(request.headers, Option.isNone(config.token), webConsole !== undefined)
    if (Option.isSome(refused)) return refused.value
    if (mcp.isMcpUrl(request.url)) {
      if (Option.isSome(config.token) && !bearerMatches(request.headers["authorization"], config.token.value)) return unauthorized()
      return yield* mcpBody(mcp.handler).pipe(Effect.catchTag("HttpServerError", noRoute))
    }
    return yield* routes.pipe(
      Effect.catchTag("HttpServerError", noRoute),
      Effect.catchDefect(schemaProblemOf)
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
