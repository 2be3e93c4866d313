/**
 * The HTTP core of the API stand-ins (AnthropicServer, ChatCompletionsServer):
 * a server on 127.0.0.1 that records every request and answers it with the
 * reply a handler picks for the n-th request. A reply is a status with
 * headers and body, a hang, a dropped socket, a body cut short, or any of
 * these after a delay of real milliseconds or once the test opens a gate.
 * The stand-ins add the shapes of their API on top.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Data, Deferred, Effect, Exit, type Scope } from "effect"

export interface RecordedRequest<Body = unknown> {
  readonly method: string
  readonly path: string
  /** Lower-case names, as Node reports them. */
  readonly headers: Readonly<Record<string, string>>
  readonly rawBody: string
  /** The body as the stand-in parses it. */
  readonly body: Body
}

export type Reply =
  | {
    readonly _tag: "Respond"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly body: string
  }
  /** Never answers; the connection stays open until the client gives up or the server closes. */
  | { readonly _tag: "Hang" }
  /** Destroys the socket without answering. */
  | { readonly _tag: "Drop" }
  /** Announces the whole body, sends `sent` bytes of it, then drops the connection. */
  | { readonly _tag: "CutShort"; readonly body: string; readonly sent: number }
  /** Answers `reply` after `millis` of real time. */
  | { readonly _tag: "Delay"; readonly millis: number; readonly reply: Reply }
  /** Answers `reply` once the test completes `gate`: a turn held until the test lets it end, on no timer. */
  | { readonly _tag: "Gated"; readonly gate: Deferred.Deferred<void>; readonly reply: Reply }
  /** A 200 of `bytes` bytes sent in 1 MiB chunks without a content-length, until done or the client hangs up. */
  | { readonly _tag: "Flood"; readonly bytes: number; readonly sent: { value: number } }
  /**
   * A 200 `text/event-stream` written piece by piece (chunked), each piece
   * flushed on its own; a Deferred in `pieces` holds the rest until the test
   * completes it. Then `end`: the response ends, the socket is destroyed
   * mid-answer, or nothing more is sent.
   */
  | {
    readonly _tag: "Events"
    readonly pieces: ReadonlyArray<string | Deferred.Deferred<void>>
    readonly end: "end" | "drop" | "hang"
  }

/** Chooses the reply to the request numbered `index` (0 for the first request). */
export type Handler<Body = unknown> = (request: RecordedRequest<Body>, index: number) => Reply

/** The stand-in could not listen on loopback. */
export class ServerError extends Data.TaggedError("ServerError")<{
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

export const hang: Reply = { _tag: "Hang" }
export const drop: Reply = { _tag: "Drop" }
export const cutShort = (body: string, sent: number): Reply => ({ _tag: "CutShort", body, sent })
/** A 200 of `bytes` bytes with no content-length (chunked); `sent` counts what went out. */
export const flood = (bytes: number): Extract<Reply, { _tag: "Flood" }> => ({ _tag: "Flood", bytes, sent: { value: 0 } })
/** `reply`, after `millis` of real time: a slow server without a wait in the test. */
export const delay = (millis: number, reply: Reply): Reply => ({ _tag: "Delay", millis, reply })

/** A 200 event stream of `pieces` (strings written in turn, Deferreds waited for), then `end`. */
export const events = (
  pieces: ReadonlyArray<string | Deferred.Deferred<void>>,
  end: "end" | "drop" | "hang" = "end"
): Reply => ({ _tag: "Events", pieces, end })

/** `reply`, once `gate` is completed. */
export const gated = (gate: Deferred.Deferred<void>, reply: Reply): Reply => ({ _tag: "Gated", gate, reply })

/** Answers the n-th request with the n-th reply; requests past the end get the last one. */
export const replies = (first: Reply, ...rest: ReadonlyArray<Reply>) => {
  const all = [first, ...rest]
  // Ignores the request, so it serves as a Handler of any body.
  return (_: unknown, index: number): Reply => all[Math.min(index, all.length - 1)] ?? first
}

export interface LoopbackServer<Body> {
  readonly port: number
  /** Every request received so far, in arrival order. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest<Body>>>
  /**
   * Waits until at least `count` requests have arrived, then returns all of
   * them. Unbounded: the unit suites run it under the TestClock; the
   * real-clock suites bound it with their `within`.
   */
  readonly awaitRequests: (count: number) => Effect.Effect<ReadonlyArray<RecordedRequest<Body>>>
  /** Waits until the client hangs up on request `index` before its answer has ended (unbounded, as awaitRequests). */
  readonly hungUp: (index: number) => Effect.Effect<void>
}

const answer = (reply: Reply, req: Http.IncomingMessage, res: Http.ServerResponse, timers: Set<NodeJS.Timeout>): void => {
  switch (reply._tag) {
    case "Respond":
      res.writeHead(reply.status, reply.headers)
      res.end(reply.body)
      return
    case "CutShort": {
      const bytes = Buffer.from(reply.body)
      res.writeHead(200, { "content-type": "application/json", "content-length": String(bytes.length) })
      res.write(bytes.subarray(0, reply.sent), () => req.socket.destroy())
      return
    }
    case "Delay": {
      const timer = setTimeout(() => {
        timers.delete(timer)
        answer(reply.reply, req, res, timers)
      }, reply.millis)
      timers.add(timer)
      return
    }
    case "Gated":
      void Effect.runPromise(Deferred.await(reply.gate)).then(() => answer(reply.reply, req, res, timers))
      return
    case "Drop":
      req.socket.destroy()
      return
    case "Flood": {
      res.writeHead(200, { "content-type": "application/json" })
      const chunk = Buffer.alloc(1024 * 1024, "a")
      const more = (): void => {
        while (reply.sent.value < reply.bytes && !res.destroyed) {
          const piece = chunk.subarray(0, Math.min(chunk.length, reply.bytes - reply.sent.value))
          reply.sent.value += piece.length
          if (!res.write(piece)) return void res.once("drain", more)
        }
        res.end()
      }
      more()
      return
    }
    case "Events": {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" })
      res.flushHeaders()
      const from = (index: number): void => {
        if (res.destroyed) return
        const piece = reply.pieces[index]
        if (piece === undefined) {
          if (reply.end === "end") res.end()
          else if (reply.end === "drop") req.socket.destroy()
          return
        }
        if (typeof piece === "string") return void res.write(piece, () => from(index + 1))
        void Effect.runPromise(Deferred.await(piece)).then(() => from(index + 1))
      }
      from(0)
      return
    }
    case "Hang":
      return
  }
}

/** A Deferred per request index, made when first asked for. */
const perRequest = () => {
  const made: Array<Deferred.Deferred<void>> = []
  return (index: number): Deferred.Deferred<void> => {
    for (let i = made.length; i <= index; i++) made.push(Deferred.makeUnsafe<void>())
    return made[index]!
  }
}

/**
 * Serves `handler` on 127.0.0.1 for the life of the scope; `port` 0 picks
 * a free one. `parse` turns the raw body into the stand-in's `body`.
 */
export const serve = <Body>(
  handler: Handler<Body>,
  parse: (rawBody: string) => Body,
  port = 0
): Effect.Effect<LoopbackServer<Body>, ServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const recorded: Array<RecordedRequest<Body>> = []
    // arrival(i) completes when request i has been recorded; hangUp(i) when its client hangs up before the answer's end.
    const arrival = perRequest()
    const hangUp = perRequest()
    const timers = new Set<NodeJS.Timeout>()

    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks).toString("utf8")
        const request: RecordedRequest<Body> = {
          method: req.method ?? "",
          path: req.url ?? "",
          headers: Object.fromEntries(
            Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value ?? ""])
          ),
          rawBody,
          body: parse(rawBody)
        }
        const index = recorded.length
        recorded.push(request)
        res.once("close", () => {
          if (!res.writableFinished) Deferred.doneUnsafe(hangUp(index), Exit.void)
        })
        answer(handler(request, index), req, res, timers)
        Deferred.doneUnsafe(arrival(index), Exit.void)
      })
    })

    yield* Effect.acquireRelease(
      Effect.callback<void, ServerError>((resume) => {
        server.once("error", (cause) => resume(Effect.fail(new ServerError({ message: "listen failed", cause }))))
        server.listen(port, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.callback<void>((resume) => {
          for (const timer of timers) clearTimeout(timer)
          // Hanging requests keep their sockets open; close them or close() never returns.
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )

    return {
      port: (server.address() as AddressInfo).port,
      requests: Effect.sync(() => [...recorded]),
      awaitRequests: (count) =>
        count <= 0
          ? Effect.sync(() => [...recorded])
          : Deferred.await(arrival(count - 1)).pipe(Effect.andThen(Effect.sync(() => [...recorded]))),
      hungUp: (index) => Deferred.await(hangUp(index))
    }
  })

/** A loopback port on which nothing listens (bound, then released): connection refused. */
export const unusedPort: Effect.Effect<number, ServerError> = Effect.callback((resume) => {
  const probe = Http.createServer()
  probe.once("error", (cause) => resume(Effect.fail(new ServerError({ message: "listen failed", cause }))))
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as AddressInfo
    probe.close(() => resume(Effect.succeed(port)))
  })
})

/** `http://127.0.0.1:{unused port}`, for "connection refused". */
export const unusedUrl: Effect.Effect<string, ServerError> = Effect.map(unusedPort, (port) => `http://127.0.0.1:${port}`)
