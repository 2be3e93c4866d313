/**
 * POST /v1/agents/{id}/ag-ui (HttpApiAgUi): the run's last user message
 * checked as any message is (HostMessage.decoder: its size, its key),
 * handed to the agent like the console's, and the turn told as AG-UI events.
 * A refusal (a run without a user message, a runId that cannot be a key,
 * a bad id, a full disk) comes before the stream, as the JSON error of the
 * message route. Its body is held to its limit before it is read (runBody).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { AgentHost } from "./AgentHost.js"
import * as HostMessage from "./HostMessage.js"
import * as HttpApiAgUi from "./HttpApiAgUi.js"
import { Api } from "./HttpApiDefinition.js"
import * as Errors from "./HttpApiErrors.js"
import { AGUI_RUN_MESSAGES, agUiBodyLimit, limited } from "./HttpBodyLimits.js"
import { unsupportedMedia } from "./HttpRequestChecks.js"
import { KEY_MAX_LENGTH, validKey } from "./IdempotencyStore.js"

/** Before a run's id in its Idempotency-Key: no key of the JSON route can name an AG-UI run's reply. */
const KEY_PREFIX = "ag-ui-"

/** The run's Idempotency-Key, or what is wrong with its runId (the client sent no key: the runId is what it must mend). */
const runKey = (runId: string): Result.Result<string, string> => {
  const key = `${KEY_PREFIX}${runId}`
  if (runId !== "" && validKey(key)) return Result.succeed(key)
  const shown = runId.length > 40 ? `${JSON.stringify(runId.slice(0, 40))}... (${runId.length} characters)` : JSON.stringify(runId)
  return Result.fail(
    `runId must be 1 to ${KEY_MAX_LENGTH - KEY_PREFIX.length} visible ASCII characters (no spaces): it is the run's ` +
      `Idempotency-Key, ${KEY_PREFIX}<runId>; got ${shown}`
  )
}

/**
 * The run's body: JSON, of at most agUiBodyLimit bytes (a 415 or a 413 as the
 * message route answers them, the body unread). Without this, Effect would
 * read a body of any size and answer another media type in plain text.
 */
export const runBody = (options: { readonly maxMessageBytes: number }) => {
  const limit = agUiBodyLimit(options.maxMessageBytes)
  const held = limited(
    limit,
    `an AG-UI run may carry ${AGUI_RUN_MESSAGES} messages' worth of conversation, each of at most ` +
      `${options.maxMessageBytes} bytes of text (PLANCKCLAW_MAX_MESSAGE_BYTES); start a new thread: the agent keeps its own memory`
  )
  return Layer.succeed(HttpApiAgUi.RunBody, (run) =>
    Effect.gen(function*() {
      const media = unsupportedMedia((yield* HttpServerRequest.HttpServerRequest).headers)
      return Option.isSome(media) ? media.value : yield* held(run)
    }))
}

export const group = (options: { readonly maxMessageBytes: number }) =>
  HttpApiBuilder.group(Api, "agUi", Effect.fnUntraced(function*(handlers) {
    const host = yield* AgentHost
    const check = HostMessage.decoder(options.maxMessageBytes)
    return handlers.handle("run", ({ params, payload }) =>
      Effect.gen(function*() {
        const text = HttpApiAgUi.lastUserText(payload)
        if (text === undefined) {
          return yield* new Errors.BadRequest({ error: "bad-input", message: "the run has no user message to send to the agent" })
        }
        // Said in the run's terms: it has no `text` field, and an image or a file alone is no text for the agent.
        if (text.trim() === "") {
          return yield* new Errors.BadRequest({
            error: "bad-input",
            message: "the run's last user message holds no text (the agent reads text only, not an image or a file alone)"
          })
        }
        const key = runKey(payload.runId)
        if (Result.isFailure(key)) return yield* new Errors.BadRequest({ error: "bad-input", message: key.failure })
        const message = yield* check(params.id, { text, channel: "ag-ui", idempotencyKey: key.success })
        const turn = yield* host.streamChecked(message)
        return yield* HttpApiAgUi.respond(payload, HttpApiAgUi.toAgUi(payload.runId, turn.events, turn.reply))
      }).pipe(Effect.catchTag("HostError", Errors.fromHostAmong(Errors.SendErrors))))
  }))
