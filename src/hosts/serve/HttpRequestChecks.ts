/**
 * What the HTTP API checks of a request before any route reads it:
 *
 * - Web pages are refused. A browser adds `Origin` to every cross-site POST
 *   and may send a `text/plain` one to 127.0.0.1 without asking first; the
 *   API is for programs, so any request that carries `Origin` is a 403,
 *   but for the web console's own page when it is served: an `Origin` of
 *   `http://` and the request's own `Host`. Another site's page cannot send
 *   that: without a token `Host` must be loopback (below), so the origin is
 *   this server's own; with one, a rebound name's page still has no token.
 * - Without PLANCKCLAW_HTTP_TOKEN (loopback only), `Host` must name a
 *   loopback address or `localhost`: a page whose name was rebound to
 *   127.0.0.1 (DNS rebinding) sends its own name there.
 * - The bearer token's scheme is read case-insensitively, as HTTP says; a
 *   PLANCKCLAW_HTTP_TOKEN that clients could not all send (white space
 *   only, or beyond printable ASCII) is refused at start.
 * - A known path (any of HttpApiDefinition's endpoints) asked with a
 *   method it does not take is a 405 with `Allow`; one whose id could not
 *   be read at all (broken percent-encoding, too long for the router) is a
 *   400, not a 404.
 * - What a route's Schemas refuse (HttpApiDefinition: the id, the query,
 *   a header) is a 400 whose message is the one the failing Schema carries.
 */
import * as crypto from "node:crypto"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import { invalidSetting } from "../../config/ConfigRange.js"
import { firstProblem } from "../../claws/ClawDeclarations.js"
import { unpadded } from "../../config/Secrets.js"
import { HttpToken } from "../../config/settings/Serve.js"
import * as AgentId from "./AgentId.js"
import { firstIssue } from "./HostMessage.js"
import { Api, UNKNOWN_QUERY_PARAMETER } from "./HttpApiDefinition.js"

export const problem = (status: number, error: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe({ error, message }, { status, headers })

/** A loopback address or `localhost`: what `--http` may listen on without a token, and what `Host` may name then. */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/** The host part of a Host header (`name`, `name:port`, `[v6]:port`, the brackets dropped), lower-cased. */
const hostName = (header: string): string => {
  const lower = header.trim().toLowerCase()
  if (lower.startsWith("[")) return lower.slice(1, lower.indexOf("]"))
  const colon = lower.lastIndexOf(":")
  return colon === -1 ? lower : lower.slice(0, colon)
}

/** A 403 for a request from a web page or to a name that is not loopback (see the module comment). */
export const refusedOrigin = (
  headers: Readonly<Record<string, string | undefined>>,
  loopbackOnly: boolean,
  /** The web console is served: its own page (Origin the server's own, http://<Host>) may call the API. */
  ownPageAllowed = false
): Option.Option<HttpServerResponse.HttpServerResponse> => {
  const origin = headers["origin"]
  const ownPage = ownPageAllowed && origin !== undefined && headers["host"] !== undefined &&
    origin.toLowerCase() === `http://${headers["host"].trim().toLowerCase()}`
  if (origin !== undefined && !ownPage) {
    return Option.some(problem(
      403,
      "cross-origin",
      "requests from web pages (with an Origin header) are refused: the API is for programs on this machine or holding the token"
    ))
  }
  const host = headers["host"]
  if (loopbackOnly && host !== undefined && !isLoopback(hostName(host))) {
    return Option.some(problem(
      403,
      "bad-host",
      `the Host header names ${JSON.stringify(host.slice(0, 100))}; without PLANCKCLAW_HTTP_TOKEN the API answers only ` +
        "requests addressed to 127.0.0.1, [::1] or localhost"
    ))
  }
  return Option.none()
}

/**
 * The bearer token: empty is none. One of white space only is refused, as no
 * client could send it (HTTP drops the spaces around a header's value, so
 * nobody could authenticate), and so is one beyond printable ASCII; the
 * spaces around any other are dropped for the same reason (Secrets.unpadded).
 */
export const HttpTokenConfig = Config.option(Config.String(HttpToken.key)).pipe(
  Config.mapEffect((token) => {
    if (Option.isNone(token) || token.value === "") return Effect.succeed(Option.none<Redacted.Redacted<string>>())
    if (token.value.trim() === "") {
      return Effect.fail(invalidSetting(
        HttpToken.key,
        "is only white space, which no client can send in a header; set a real token, or leave it empty to serve loopback only"
      ))
    }
    // Node reads a header as Latin-1 bytes while clients send UTF-8 (curl) or Latin-1 (a browser), or nothing
    // past U+00FF: a token beyond printable ASCII would be refused to some clients, or all, without saying why.
    const unsendable = unpadded(token.value).search(/[^\x20-\x7e\t]/)
    if (unsendable !== -1) {
      return Effect.fail(invalidSetting(
        HttpToken.key,
        `holds a character at position ${unsendable + 1} that is not printable ASCII, which HTTP clients do not send ` +
          "alike in a header (or at all); use letters, digits and ASCII punctuation (openssl rand -hex 32 makes one)"
      ))
    }
    return Effect.succeed(Option.some(Redacted.make(unpadded(token.value))))
  })
)

const digest = (text: string) => crypto.createHash("sha256").update(text, "utf8").digest()

/** Equal-length digests compared with timingSafeEqual: neither the token nor its length leaks by timing. */
export const credentialMatches = (credential: Redacted.Redacted<string>, token: Redacted.Redacted<string>): boolean =>
  // The token is never empty (HttpTokenConfig): an empty credential, as a missing header decodes, never matches.
  crypto.timingSafeEqual(digest(`Bearer ${Redacted.value(credential)}`), digest(`Bearer ${Redacted.value(token)}`))

/** Whether an `Authorization` header carries the token (for a request no route takes). */
export const bearerMatches = (header: string | undefined, token: Redacted.Redacted<string>): boolean => {
  const match = /^bearer +(.*)$/i.exec(header ?? "")
  return credentialMatches(Redacted.make(match === null ? "" : match[1]!), token)
}

export const unauthorized = () =>
  problem(401, "unauthorized", "this route needs Authorization: Bearer <PLANCKCLAW_HTTP_TOKEN>", {
    "www-authenticate": "Bearer realm=\"planckclaw\""
  })

interface Route {
  /** Its path as a pattern, the agent id (if any) in the group `id`. */
  readonly pattern: RegExp
  readonly methods: ReadonlyArray<string>
}

const literal = (segment: string) => segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * The API's paths and the methods each takes, read from its endpoints
 * (HttpApiDefinition), so a route added there is covered here too.
 */
const routes: ReadonlyArray<Route> = (() => {
  const byPath = new Map<string, Array<string>>()
  for (const group of Object.values(Api.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      const methods = byPath.get(endpoint.path) ?? []
      if (!methods.includes(endpoint.method)) methods.push(endpoint.method)
      byPath.set(endpoint.path, methods)
    }
  }
  const segmentPattern = (segment: string) =>
    segment === ":id" ? "(?<id>[^/]*)" : segment.startsWith(":") ? "[^/]*" : literal(segment)
  return [...byPath].map(([path, methods]): Route => ({ pattern: new RegExp(`^${path.split("/").map(segmentPattern).join("/")}$`), methods }))
})()

const decoded = (raw: string): string => Result.getOrElse(Result.try(() => decodeURIComponent(raw)), () => raw)

/** What a request the router found no route for gets: 405, 400 (an id it could not read) or 404. */
export const noRoute = (method: string, url: string): HttpServerResponse.HttpServerResponse => {
  const path = url.split("?")[0] ?? url
  for (const route of routes) {
    const match = route.pattern.exec(path)
    if (match === null) continue
    if (!route.methods.includes(method)) {
      return problem(405, "method-not-allowed", `${path} takes ${route.methods.join(", ")}, not ${method}`, {
        allow: route.methods.join(", ")
      })
    }
    const raw = match.groups?.["id"]
    if (raw !== undefined) {
      const refused = AgentId.parse(decoded(raw))
      const message = refused._tag === "Failure"
        ? refused.failure.message
        : `the agent id in ${JSON.stringify(path.slice(0, 100))} could not be read`
      return problem(400, "bad-id", message)
    }
  }
  return problem(404, "not-found", `no route ${method} ${url.slice(0, 200)}`)
}

/**
 * The messages route's body must be JSON (UTF-8, the only charset JSON has), sent as it is: a 415 otherwise. A
 * compressed one (Content-Encoding: gzip) would be read as its compressed bytes, and refused as not UTF-8.
 */
export const unsupportedMedia = (headers: Readonly<Record<string, string | undefined>>): Option.Option<HttpServerResponse.HttpServerResponse> => {
  const contentType = headers["content-type"]
  const [type, ...parameters] = (contentType ?? "").split(";").map((part) => part.trim().toLowerCase())
  const charset = parameters.find((parameter) => parameter.startsWith("charset="))?.slice("charset=".length).replace(/"/g, "")
  const encoding = (headers["content-encoding"] ?? "").trim().toLowerCase()
  if (encoding !== "" && encoding !== "identity") {
    return Option.some(problem(
      415,
      "unsupported-media-type",
      `the body must be sent as it is, without Content-Encoding (got ${JSON.stringify(encoding.slice(0, 100))})`
    ))
  }
  if (type === "application/json" && (charset === undefined || charset === "utf-8" || charset === "utf8")) return Option.none()
  return Option.some(problem(
    415,
    "unsupported-media-type",
    `the body must be sent as Content-Type: application/json (UTF-8), not ${JSON.stringify((contentType ?? "none").slice(0, 100))}`
  ))
}


/** The 400 for what a route's Schemas refused before it ran: its id, its query or a header. */
export const schemaProblem = (error: HttpApiSchemaError): HttpServerResponse.HttpServerResponse => {
  const { key, message } = firstIssue(error.cause.issue)
  switch (error.kind) {
    case "Params":
      return problem(400, "bad-id", message)
    case "Query":
      return problem(
        400,
        "bad-query",
        // Named: a typo (`untill=`) is seen at once. GET /v1/agents's says what it takes here, the others' after the colon.
        message.startsWith(UNKNOWN_QUERY_PARAMETER) && key !== undefined
          ? `${UNKNOWN_QUERY_PARAMETER} ${JSON.stringify(key.slice(0, 40))}${
            message === UNKNOWN_QUERY_PARAMETER ? "; GET /v1/agents takes limit, after and search" : message.slice(UNKNOWN_QUERY_PARAMETER.length)
          }`
          : message
      )
    case "Headers":
      return problem(400, "bad-input", message)
    case "Payload":
      // The message route's words name their field ("channel" must be...); a bare one (AG-UI's "Missing key") says where.
      return problem(400, "bad-body", key !== undefined && message.includes(JSON.stringify(key)) ? message : (firstProblem(error.cause.issue) ?? message).slice(0, 500))
    default:
      // An answer that does not fit its own Schema: ours to mend, not the client's.
      return problem(500, "internal", `the answer could not be encoded (${error.kind})`)
  }
}
