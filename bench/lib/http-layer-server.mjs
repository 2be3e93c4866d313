/**
 * serve's HTTP layer alone (issue 52 item 2): the build's HttpApi (routes,
 * Schemas, checks, connection limits) over an agent host that answers every
 * message at once, in a process of its own, so its CPU per request is the
 * HTTP layer's own, to set beside Effect 4's router alone
 * (bench/lib/bare-router.mjs) under the same load.
 *
 *   fork("bench/lib/http-layer-server.mjs"): sends { port } once listening;
 *   ends on the message "exit", SIGTERM, or when its parent goes.
 */
import { effect, fromDist, httpServerModule, settingsLayer, settingsProvider, warningsAndUp } from "./build.mjs"

const { Context, Effect, Layer } = effect
const HttpServer = await httpServerModule()
const AgentHost = await fromDist("hosts/serve/AgentHost.js")
const HttpApi = await fromDist("hosts/serve/HttpApi.js")

const reply = { reply: "Noted.", stored: true }
const unused = () => Effect.die("not used by this bench")
const host = Layer.succeed(AgentHost.AgentHost, {
  directory: "/nonexistent",
  sendChecked: () => Effect.succeed(reply),
  send: () => Effect.succeed(reply),
  accept: unused,
  list: unused,
  get: unused,
  compact: unused
})
const layer = HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(
  Layer.provideMerge(host),
  Layer.provide(Layer.merge(settingsLayer(settingsProvider([])), warningsAndUp))
)

process.on("message", (message) => { if (message === "exit") process.exit(0) })
process.on("SIGTERM", () => process.exit(0))
process.on("disconnect", () => process.exit(0))
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const context = yield* Layer.build(layer)
  process.send?.({ port: Context.get(context, HttpServer.HttpServer).address.port })
  yield* Effect.never
})))
