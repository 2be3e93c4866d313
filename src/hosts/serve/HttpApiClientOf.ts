/**
 * A typed client of `planckclaw serve`'s HTTP API, for programs that embed
 * or drive it: effect/http-api's HttpApiClient of HttpApiDefinition's Api.
 * Payloads are checked by the same Schemas as the server checks them, and a
 * refusal arrives as its error class (HttpApiErrors: BadRequest, NotFound,
 * Unauthorized...). Bring an HttpClient (effect/http's FetchHttpClient, or
 * @effect/platform-node's NodeHttpClient).
 *
 *     const client = yield* HttpApiClientOf.make({ baseUrl: "http://127.0.0.1:7878", token })
 *     const { reply } = yield* client.agents.send({ params: { id: "alice" }, headers: {}, payload: { text: "hello" } })
 */
import type * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import type * as Redacted from "effect/Redacted"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import { Api } from "./HttpApiDefinition.js"

export type Client = HttpApiClient.ForApi<typeof Api>

export interface Options {
  /** Where `serve` listens, e.g. `http://127.0.0.1:7878`. */
  readonly baseUrl: string | URL
  /** PLANCKCLAW_HTTP_TOKEN of the server, sent as the bearer token; none when it has none. */
  readonly token?: string | Redacted.Redacted<string> | undefined
}

export const make = (options: Options): Effect.Effect<Client, never, HttpClient.HttpClient> => {
  const { token } = options
  return HttpApiClient.make(Api, {
    baseUrl: options.baseUrl,
    transformClient: token === undefined ? identity : HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
  })
}
