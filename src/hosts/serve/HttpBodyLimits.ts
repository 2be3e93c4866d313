/**
 * How large a body each route of the HTTP API takes, and its refusal: a 413
 * `too-large` JSON problem with `Connection: close`, sent before the body is
 * read whole. All derive from the host's PLANCKCLAW_MAX_MESSAGE_BYTES:
 *
 * - a message (POST /v1/agents/{id}/messages): 6 × its bytes of text + 4 KiB,
 *   as JSON may spell each byte in up to six (\u0000), plus room for the
 *   channel; read by HttpApiHandlers itself (raced against a stop);
 * - an AG-UI run (POST /v1/agents/{id}/ag-ui): AGUI_RUN_MESSAGES messages'
 *   worth, as a run carries the conversation so far, not one message;
 * - an MCP request (POST /v1/mcp): one message's worth (ask_agent carries
 *   one; a claw's arguments are smaller than that).
 *
 * The last two are read by Effect (HttpApiBuilder, McpServer), so `limited`
 * holds them to their cap with Effect's own MaxBodySize.
 */
import { isUtf8 } from "node:buffer"
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { problem } from "./HttpRequestChecks.js"

/** How many messages' worth of body an AG-UI run may carry: the conversation the client keeps and sends again with each run. */
export const AGUI_RUN_MESSAGES = 16

/** The body of a message of at most `maxMessageBytes` bytes of text. */
export const messageBodyLimit = (maxMessageBytes: number) => 6 * maxMessageBytes + 4096

export const agUiBodyLimit = (maxMessageBytes: number) => AGUI_RUN_MESSAGES * messageBodyLimit(maxMessageBytes)

export const mcpBodyLimit = messageBodyLimit

/** The 413 for a body over `limit` bytes; `why` says what the limit is made of. Made only when sent (its JSON and headers cost). */
export const tooLarge = (limit: number, why: string) =>
  problem(413, "too-large", `the body is over ${limit} bytes; ${why}`, { connection: "close" })

/** JSON's one encoding, strictly: a byte of another (Latin-1's é) would otherwise become U+FFFD in the agent's memory. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

const notUtf8 = () =>
  problem(400, "bad-body", "the body is not valid UTF-8 (a byte of another encoding, such as Latin-1 or Windows-1252): send the JSON in UTF-8")

/** A body's text, or the 400 saying its bytes are not UTF-8; a byte order mark before it is dropped, as JSON readers may. */
export const utf8Text = (body: Uint8Array): Result.Result<string, HttpServerResponse.HttpServerResponse> =>
  Result.mapError(Result.try(() => strictUtf8.decode(body)), notUtf8)

/** Whether a body read failed for passing MaxBodySize (Effect reads up to the cap, then drains the rest unkept). */
const overTheCap = (error: unknown) =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"

/**
 * `handler`, its request's body held to `limit` bytes: one declared larger
 * (Content-Length) is refused unread; one sent in chunks is read only up to
 * the cap (MaxBodySize) and refused past it. The body is read here, before
 * `handler`: the request keeps a body once read, and hands `handler` that
 * one (McpServer would otherwise answer a body over the cap as a JSON-RPC
 * parse error, HttpApiBuilder as a defect).
 */
export const limited = (limit: number, why: string) =>
<E, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = request.headers["content-length"]
    if (declared !== undefined && Number(declared) > limit) return tooLarge(limit, why)
    const body = yield* Effect.result(request.arrayBuffer)
    if (Result.isFailure(body)) {
      return overTheCap(body.failure)
        ? tooLarge(limit, why)
        : problem(400, "bad-body", `the body could not be read: ${body.failure.message}`)
    }
    // Checked here, decoded by the handler (Effect's reader would replace the bytes that are not UTF-8).
    if (!isUtf8(body.success)) return notUtf8()
    return yield* handler
  }).pipe(Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit)))
