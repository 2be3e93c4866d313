/**
 * The baseline of the HTTP layer's cost (issue 52 item 2): Effect 4's own
 * router on @effect/platform-node's server, alone, in a process of its own,
 * answering POST /v1/agents/:id/messages as serve does (the JSON body read
 * and checked, `{"reply","stored"}` answered) with nothing behind it. With
 * `bare: "node"`, a bare node:http server doing the same, for reference.
 *
 *   fork("bench/lib/bare-router.mjs", [effect|node]): sends { port } once
 *   listening; ends on SIGTERM or when its parent goes.
 */
import * as http from "node:http"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"

const REPLY = { reply: "Noted.", stored: true }
const bad = (message) => ({ error: "bad-request", message })

const effectRouter = () => {
  const routes = HttpRouter.use(Effect.fn(function*(router) {
    yield* router.add("POST", "/v1/agents/:id/messages", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const body = yield* Effect.orElseSucceed(request.json, () => undefined)
      return typeof body === "object" && body !== null && typeof body.text === "string"
        ? HttpServerResponse.jsonUnsafe(REPLY)
        : HttpServerResponse.jsonUnsafe(bad("text is missing"), { status: 400 })
    }))
  }))
  const server = Layer.mergeAll(
    HttpRouter.serve(routes, { disableLogger: true }),
    Layer.effectDiscard(Effect.flatMap(HttpServer.HttpServer, (server) =>
      Effect.sync(() => process.send?.({ port: server.address.port }))))
  ).pipe(Layer.provide(NodeHttpServer.layer(http.createServer, { host: "127.0.0.1", port: 0 })))
  Effect.runFork(Layer.launch(server))
}

const nodeServer = () => {
  const server = http.createServer({ keepAlive: true }, (request, response) => {
    const chunks = []
    request.on("data", (chunk) => chunks.push(chunk))
    request.on("end", () => {
      let body
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        body = undefined
      }
      const ok = request.method === "POST" && /^\/v1\/agents\/[^/]+\/messages$/.test(request.url) && typeof body?.text === "string"
      const text = JSON.stringify(ok ? REPLY : bad("text is missing"))
      response.writeHead(ok ? 200 : 400, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
      response.end(text)
    })
  })
  server.listen(0, "127.0.0.1", () => process.send?.({ port: server.address().port }))
}

if (process.argv[2] === "node") nodeServer()
else effectRouter()
process.on("SIGTERM", () => process.exit(0))
process.on("disconnect", () => process.exit(0))
