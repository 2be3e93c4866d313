/**
 * The HTTP client the brains ship with: @effect/platform-node's undici
 * client (one keep-alive connection pool for the layer's life), with the
 * undici package loaded at the first request rather than when the layer
 * builds, so a start that has not called a brain yet does not pay for it
 * (bench/cold-start.mjs).
 *
 * Why not the fetch client: on loopback (bench/brain-call.mjs, five runs,
 * main-thread CPU per call) the Anthropic brain's whole answer cost 591–685
 * µs over fetch against 294–378 over this client, its streamed one 782–944
 * against 490–620. Undici, as fetch is told here (PostJson), follows no
 * redirect: a redirect comes back as the answer.
 *
 * The HTTP client's own span (Effect's, with the URL and status) is made
 * only when a tracer someone installed records it (runtime/Tracing.ts):
 * Effect's built-in tracer keeps nothing, yet building the span cost about
 * 40 µs of a whole answer's call and 80 of a streamed one's
 * (bench/brain-call.mjs).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Tracing from "../runtime/Tracing.js"

const always = () => true

/** The undici client, its dispatcher closed with `scope`. */
const undiciIn = (scope: Scope.Scope): Effect.Effect<HttpClient.HttpClient> =>
  NodeHttpClient.makeDispatcher.pipe(
    Effect.flatMap((dispatcher) => Effect.provideService(NodeHttpClient.makeUndici, NodeHttpClient.Dispatcher, dispatcher)),
    Scope.provide(scope)
  )

export const layer: Layer.Layer<HttpClient.HttpClient> = Layer.effect(
  HttpClient.HttpClient,
  Effect.gen(function*() {
    const undici = yield* Effect.cached(undiciIn(yield* Effect.scope))
    return HttpClient.makeWith(
      (request: Effect.Effect<HttpClientRequest.HttpClientRequest, HttpClientError.HttpClientError>) =>
        Effect.withFiber((fiber) => {
          const sent = Effect.flatMap(undici, (client) => client.postprocess(request))
          return Tracing.recording(fiber) ? sent : Effect.provideService(sent, HttpClient.TracerDisabledWhen, always)
        }),
      Effect.succeed
    )
  })
)
