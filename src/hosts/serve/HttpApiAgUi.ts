/**
 * Each agent as an AG-UI endpoint (POST /v1/agents/{id}/ag-ui), served by
 * effect/ai's AgUiServer: a `RunAgentInput` in, the run's AG-UI events out as
 * server-sent events. The agent keeps its own memory, so of the run's
 * messages only the last user message is sent to it (the client's copy of
 * the conversation is not replayed); its `runId` is the message's
 * Idempotency-Key (`ag-ui-<runId>`), so a retried run gets the same reply
 * without a second turn, as for the console and the JSON route. The turn's
 * events become AG-UI's: text as TEXT_MESSAGE_*, a message closed at each
 * tool call; each tool call as TOOL_CALL_START/ARGS/END, then its outcome
 * as TOOL_CALL_RESULT; AgUiServer adds RUN_STARTED and RUN_FINISHED.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as AgUiSchema from "effect/ai/AgUiSchema"
import * as AgUiServer from "effect/ai/AgUiServer"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import type { Reply } from "./AgentInstance.js"
import * as Errors from "./HttpApiErrors.js"
import type { Told } from "./TurnStream.js"

/**
 * Holds a run's body to its limit before it is read, and refuses one not
 * sent as JSON (the server's HttpApiAgUiHandlers.runBody): as the message
 * route's, each refusal is among the route's errors. Applied inside the
 * token's check, so a request without the token is refused before its body is read.
 */
export class RunBody extends HttpApiMiddleware.Service<RunBody>()("planckclaw/HttpApi/AgUiRunBody") {}

export const makeGroup = <Params extends Schema.Top>(idParams: { readonly id: Params }) =>
  HttpApiGroup.make("agUi").add(
    HttpApiEndpoint.post("run", "/v1/agents/:id/ag-ui", {
      params: idParams,
      payload: AgUiSchema.RunAgentInput,
      success: HttpApiSchema.WithHeaders(
        HttpApiSchema.StreamSse({ data: AgUiSchema.Event, keepAlive: "15 seconds" }),
        { "cache-control": Schema.Literal("no-cache") }
      ),
      error: Errors.SendErrors
    }).annotate(
      OpenApi.Description,
      "Runs the agent as an AG-UI agent: its last user message is sent to the agent (runId as the Idempotency-Key), and the turn is told as AG-UI events"
    ).middleware(RunBody)
  )

/** The text of the run's last user message, or undefined when it has none. */
export const lastUserText = (input: AgUiSchema.RunAgentInput): string | undefined => {
  for (let index = input.messages.length - 1; index >= 0; index--) {
    const message = input.messages[index]!
    if (message.role !== "user") continue
    const content = message.content
    if (typeof content === "string") return content
    return content.flatMap((part) => part.type === "text" ? [part.text] : []).join("\n")
  }
  return undefined
}

/** The turn's events and its reply as AG-UI events (RUN_STARTED and RUN_FINISHED are AgUiServer's). */
export const toAgUi = (runId: string, events: Stream.Stream<Told>, reply: Effect.Effect<Reply>): Stream.Stream<AgUiSchema.Event> => {
  let message = 0
  let open = false
  let calls = 0
  // Tool calls waiting for their outcome, by name: the turn runs them in order.
  const waiting: Array<{ readonly name: string; readonly id: string }> = []
  const messageId = () => `${runId}-m${message}`
  const close = (): Array<AgUiSchema.Event> => {
    if (!open) return []
    open = false
    return [{ type: "TEXT_MESSAGE_END", messageId: messageId() }]
  }
  const text = (delta: string): Array<AgUiSchema.Event> => {
    if (delta === "") return []
    const start: Array<AgUiSchema.Event> = open ? [] : [{ type: "TEXT_MESSAGE_START", messageId: `${runId}-m${++message}`, role: "assistant" }]
    open = true
    return [...start, { type: "TEXT_MESSAGE_CONTENT", messageId: messageId(), delta }]
  }
  const told = Stream.flatMap(events, (event): Stream.Stream<AgUiSchema.Event> => {
    switch (event._tag) {
      case "TextDelta":
        return Stream.fromIterable(text(event.text))
      case "ToolCallStart": {
        const id = `${runId}-t${++calls}`
        waiting.push({ name: event.name, id })
        return Stream.fromIterable([
          ...close(),
          { type: "TOOL_CALL_START", toolCallId: id, toolCallName: event.name },
          { type: "TOOL_CALL_ARGS", toolCallId: id, delta: JSON.stringify(event.input ?? {}) },
          { type: "TOOL_CALL_END", toolCallId: id }
        ])
      }
      case "ToolResult": {
        const index = waiting.findIndex((call) => call.name === event.name)
        if (index === -1) return Stream.empty
        const [call] = waiting.splice(index, 1)
        return Stream.make({
          type: "TOOL_CALL_RESULT",
          messageId: `${call!.id}-result`,
          toolCallId: call!.id,
          role: "tool",
          content: `${event.ok ? "ok" : "failed"} (${Math.round(event.ms)} ms)`
        })
      }
    }
  })
  // A turn that told no text (a slash command, a reply given before): its reply as one message.
  const ending = Stream.fromEffect(reply).pipe(
    Stream.flatMap(({ reply: said }) => Stream.fromIterable(message === 0 ? [...text(said), ...close()] : close()))
  )
  return Stream.concat(told, ending)
}

/** The AG-UI answer of a run whose turn is `events` and `reply`. */
export const respond = (input: AgUiSchema.RunAgentInput, events: Stream.Stream<AgUiSchema.Event>) =>
  AgUiServer.handler(() => events)({ payload: input })
