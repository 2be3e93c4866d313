/**
 * The HTTP API's connections, below the routes (its Node server, made here
 * for @effect/platform-node's NodeHttpServer to listen with):
 *
 * - At most `maxConnections` (HttpLimits): the next OVER_CAP_ANSWERED get
 *   a 503 with Connection: close to their request, any beyond are refused
 *   at once (Node's maxConnections), so a flood never takes the descriptors
 *   the agents' files need.
 * - Node's own timers close a connection that does not send a whole
 *   request in time (408) and a kept-alive one left idle.
 * - A stop (the layer's scope closing, on SIGTERM or SIGINT) stops
 *   listening, closes idle connections at once, answers any new request and
 *   any body still being read 503 with Connection: close, and gives the
 *   requests in flight the stop's grace; a connection still open then is
 *   closed. A message accepted and not answered stays in its agent's
 *   journal: the next start answers it (and records it under its
 *   Idempotency-Key, so a retry gets that reply).
 */
import * as http from "node:http"
import type * as net from "node:net"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Logging from "../../runtime/Logging.js"
import { problem } from "./HttpRequestChecks.js"
import { type Limits, OVER_CAP_ANSWERED } from "./HttpLimits.js"

export interface Connections {
  /** The Node server, not yet listening. */
  readonly server: http.Server
  /** Completes when a stop begins: a body still being read is then answered `stoppingAnswer`. */
  readonly stopping: Effect.Effect<void>
  /** `app`, behind the answers a stopping server and a connection over the cap get. */
  readonly admit: <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
  /** Stops (see the module comment); run it while the app still answers requests. */
  readonly stop: Effect.Effect<void>
}

export const stoppingAnswer = (): HttpServerResponse.HttpServerResponse =>
  problem(503, "stopping", "planckclaw serve is stopping: send this again once it is back", { connection: "close" })

const overCapAnswer = (cap: number): HttpServerResponse.HttpServerResponse =>
  problem(
    503,
    "too-many-connections",
    `planckclaw serve holds its limit of ${cap} connections (PLANCKCLAW_MAX_CONNECTIONS): close idle ones, or try again shortly`,
    { connection: "close", "retry-after": "1" }
  )

const millis = (seconds: number) => Math.round(seconds * 1000)

/**
 * What Node answers itself to a request it cannot read (its default `clientError`: the same statuses, with
 * an empty body), as the API's JSON problems: what was wrong, not a bare status.
 */
const unreadableAnswer = (code: string | undefined, requestSeconds: number): string => {
  const [status, reason, error, message] = code === "HPE_HEADER_OVERFLOW"
    ? [431, "Request Header Fields Too Large", "headers-too-large", `the request's headers are over ${http.maxHeaderSize} bytes, the server's limit`]
    : code === "HPE_CHUNK_EXTENSIONS_OVERFLOW"
    ? [413, "Payload Too Large", "too-large", "the body's chunk extensions are over the server's limit"]
    : code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? [408, "Request Timeout", "request-timeout", `the request was not sent whole within ${requestSeconds} s (PLANCKCLAW_HTTP_REQUEST_TIMEOUT)`]
    : [400, "Bad Request", "bad-request", `the request is not HTTP/1.1 this server can read (${code ?? "malformed"})`]
  const body = JSON.stringify({ error, message })
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: close\r\n\r\n${body}`
}

/** A Node server with the limits' timeouts and cap, and what a stop does with it. */
export const make = (limits: Limits): Effect.Effect<Connections> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const log = (effect: Effect.Effect<void>) => void Effect.runForkWith(context)(Logging.toStderr(effect))
    const requestTimeout = millis(limits.requestSeconds)
    const server = http.createServer({
      // Headers and body both within the request timeout; a new connection's clock starts as it connects.
      requestTimeout,
      headersTimeout: requestTimeout,
      keepAliveTimeout: millis(limits.idleSeconds),
      // How often Node looks for requests past their time: its default, 30 s, would double a short timeout.
      connectionsCheckingInterval: Math.min(1000, Math.max(25, Math.round(requestTimeout / 4)))
    })
    const cap = limits.maxConnections
    server.maxConnections = cap + OVER_CAP_ANSWERED

    const open = new Set<net.Socket>()
    // Connections that sent a request: Node's closeIdleConnections leaves out those that never did.
    const asked = new WeakSet<net.Socket>()
    const overCap = new WeakSet<net.Socket>()
    let warned = false
    // Before Node's own listener: the count includes this connection when its request is read.
    server.prependListener("connection", (socket: net.Socket) => {
      open.add(socket)
      socket.once("close", () => {
        open.delete(socket)
        if (open.size <= cap / 2) warned = false
      })
      if (open.size <= cap) return
      overCap.add(socket)
      if (warned) return
      warned = true
      log(Effect.logWarning(
        `${cap} connections are open (PLANCKCLAW_MAX_CONNECTIONS): new ones are answered 503, and beyond ` +
          `${cap + OVER_CAP_ANSWERED} refused, until some close`
      ))
    })

    let stopping = false
    const stopped = yield* Deferred.make<void>()
    // The response each connection is sending, until it is finished: a request it cannot read is answered only
    // where no response has begun (Node's own rule), or its answer would land inside that one.
    const answering = new WeakMap<net.Socket, http.ServerResponse>()
    // A response finished during a stop leaves its connection idle: closed then, not at its keep-alive timeout.
    server.on("request", (request: http.IncomingMessage, response: http.ServerResponse) => {
      asked.add(request.socket)
      answering.set(request.socket, response)
      response.once("finish", () => {
        if (answering.get(request.socket) === response) answering.delete(request.socket)
        if (stopping) server.closeIdleConnections()
      })
    })
    server.on("clientError", (error: NodeJS.ErrnoException, socket: net.Socket) => {
      if (socket.writable && answering.get(socket)?.headersSent !== true) socket.write(unreadableAnswer(error.code, limits.requestSeconds))
      socket.destroy(error)
    })

    const admit = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        if (stopping) return Effect.succeed(stoppingAnswer())
        if (overCap.has(NodeHttpServerRequest.toIncomingMessage(request).socket)) return Effect.succeed(overCapAnswer(cap))
        return app
      })

    const stop = Effect.gen(function*() {
      stopping = true
      yield* Deferred.succeed(stopped, undefined)
      const closed = yield* Deferred.make<void>()
      // Stops listening; called back once every connection is gone. Idle ones go now: those between
      // requests, and those that have sent none or only part of one (Node's timeouts for these stop with it).
      server.close(() => Deferred.doneUnsafe(closed, Exit.void))
      server.closeIdleConnections()
      for (const socket of open) if (!asked.has(socket)) socket.destroy()
      const grace = Duration.millis(millis(limits.stopGraceSeconds))
      yield* Logging.toStderr(Effect.logInfo(
        `stopping: no new requests; those in flight have up to ${Duration.format(grace)} (PLANCKCLAW_STOP_GRACE)`
      ))
      // Interruptible, or the timeout could not end the wait: a finalizer runs uninterruptibly.
      const inTime = yield* Effect.timeoutOption(Effect.interruptible(Deferred.await(closed)), grace)
      if (Option.isSome(inTime)) return
      yield* Logging.toStderr(Effect.logWarning(
        "PLANCKCLAW_STOP_GRACE is over: closing the connections left; the messages they carried that were accepted " +
          "are answered at the next start"
      ))
      // Every socket, not only those Node's closeAllConnections knows (it leaves out any taken over by an upgrade).
      for (const socket of open) socket.destroy()
      yield* Deferred.await(closed)
    })

    return { server, stopping: Deferred.await(stopped), admit, stop } satisfies Connections
  })
