/**
 * A message answered as server-sent events (`Accept: text/event-stream`):
 * the real API on loopback, the real Anthropic brain streaming from a
 * loopback stand-in held at a gate, and a plain node:http client reading
 * the events as they arrive.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { type Cause, Context, Deferred, Duration, Effect, Layer, Queue, Redacted } from "effect"
import * as HttpServer from "effect/http/HttpServer"
import * as Anthropic from "../../../src/brain/AnthropicBrain.js"
import * as InMemoryClaws from "../../../src/claws/InMemoryClaws.js"
import * as AgentHost from "../../../src/hosts/serve/AgentHost.js"
import * as HttpApi from "../../../src/hosts/serve/HttpApi.js"
import * as TurnCancels from "../../../src/hosts/serve/TurnCancels.js"
import { Brain } from "../../../src/ports/Brain.js"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import { timeTool } from "../../support/Harness.js"
import { eventually, within } from "../../support/Sandbox.js"
import { historyOf, settings, tempDir } from "./Kit.js"

const { blockEvents, events, messageEnd, messageStart, streamEvents } = AnthropicServer

/** The API on a free loopback port, its agents on the Anthropic brain at `url` with the time tool. */
const serve = (url: string) =>
  Effect.gen(function*() {
    const root = tempDir()
    const values = {
      PLANCKCLAW_AGENTS_DIR: `${root}/agents`,
      PLANCKCLAW_DIR: `${root}/memory`,
      PLANCKCLAW_MODEL: "test-model"
    }
    const brain = Layer.effect(
      Brain,
      Anthropic.make({ apiKey: Redacted.make("test-key-not-secret"), baseUrl: url, timeout: Duration.seconds(60), retries: 0, debug: false })
    ).pipe(Layer.provide(NodeHttpClient.layerUndici))
    const host = AgentHost.layer.pipe(Layer.provide(Layer.merge(brain, InMemoryClaws.layer([timeTool]))), Layer.provide(settings(values)))
    const context = yield* Layer.build(HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(host), Layer.provide(settings(values))))
    const address = Context.get(context, HttpServer.HttpServer).address
    return { port: address._tag === "UnixPathAddress" ? 0 : address.port, root }
  })

interface SseEvent {
  readonly event: string
  readonly data: unknown
}

/**
 * A POST of `text` with node:http; its server-sent events go into a queue as
 * they arrive, and it ends with the response. `cut` destroys the connection, as a client that goes away.
 */
const streamMessage = (port: number, id: string, text: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const arrived = yield* Queue.unbounded<SseEvent, Cause.Done>()
    const answer = yield* Deferred.make<{ readonly status: number; readonly contentType: string | undefined }>()
    const request = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: `/v1/agents/${id}/messages`,
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      agent: false
    }, (response) => {
      Deferred.doneUnsafe(answer, Effect.succeed({ status: response.statusCode ?? 0, contentType: response.headers["content-type"] }))
      let buffered = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => {
        buffered += chunk
        for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
          const block = buffered.slice(0, end)
          buffered = buffered.slice(end + 2)
          const fields = new Map(block.split("\n").filter((line) => !line.startsWith(":")).map((line) => {
            const colon = line.indexOf(":")
            return [line.slice(0, colon), line.slice(colon + 1).trimStart()] as const
          }))
          if (fields.has("event")) Queue.offerUnsafe(arrived, { event: fields.get("event")!, data: JSON.parse(fields.get("data") ?? "null") })
        }
      })
      response.on("end", () => Queue.endUnsafe(arrived))
    })
    request.on("error", () => Queue.endUnsafe(arrived))
    request.end(JSON.stringify({ text }))
    return { arrived, answer: Deferred.await(answer), cut: Effect.sync(() => request.destroy()) }
  })

/** A POST answered as JSON: its status, content type and parsed body. */
const postJson = (port: number, id: string, text: string, headers: Record<string, string> = {}) =>
  Effect.tryPromise(() =>
    fetch(`http://127.0.0.1:${port}/v1/agents/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ text })
    }).then(async (response) => ({ status: response.status, contentType: response.headers.get("content-type"), body: await response.json() }))
  )

/** POST /v1/agents/{id}/cancel under `key`: its JSON answer. */
const cancel = (port: number, id: string, key: string) =>
  Effect.tryPromise(() =>
    fetch(`http://127.0.0.1:${port}/v1/agents/${id}/cancel`, { method: "POST", headers: { "idempotency-key": key } })
      .then((response) => response.json())
  )

/** The first answer calls the time tool after a line of text; the second writes "It is " and holds "noon." until `gate`. */
const toolThenGated = (gate: Deferred.Deferred<void>) =>
  AnthropicServer.replies(
    events(streamEvents([
      { type: "text", pieces: ["Let me ", "check."] },
      { type: "tool_use", id: "toolu_1", name: "get_time", input: {} }
    ])),
    events([
      messageStart(),
      ...blockEvents({ type: "text", pieces: ["It is ", "noon."] }, 0).slice(0, 2),
      gate,
      ...blockEvents({ type: "text", pieces: ["It is ", "noon."] }, 0).slice(2),
      ...messageEnd("end_turn")
    ])
  )

const REPLY = "Let me check.\n\nIt is noon."

/** The agent's inbox journal as text: what it has taken and not yet let go. */
const journalOf = (root: string, id: string) => fs.readFileSync(path.join(root, "agents", id, ".inbox.jsonl"), "utf8")

describe("a message answered as server-sent events", () => {
  it.live("tells the text, the tool call and its result as the turn goes, before the brain has finished, then ends with the reply", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const server = yield* AnthropicServer.make(toolThenGated(gate))
      const { port, root } = yield* serve(server.url)
      const client = yield* streamMessage(port, "alice", "What time is it?")
      expect(yield* client.answer).toEqual({ status: 200, contentType: "text/event-stream" })
      expect(yield* Queue.take(client.arrived)).toEqual({ event: "accepted", data: { key: null } })

      // Everything up to "It is ", while the brain still holds "noon." back.
      const told: Array<SseEvent> = []
      for (let n = 0; n < 5; n++) told.push(yield* Queue.take(client.arrived))
      expect(told.map(({ data, event }) => event === "tool-result" ? { event, data: { ...(data as object), ms: 0 } } : { event, data })).toEqual([
        { event: "text", data: { text: "Let me " } },
        { event: "text", data: { text: "check." } },
        { event: "tool", data: { name: "get_time", input: {} } },
        { event: "tool-result", data: { name: "get_time", ok: true, ms: 0 } },
        { event: "text", data: { text: "It is " } }
      ])
      expect(typeof (told[3]!.data as { ms: unknown }).ms).toBe("number")
      expect(historyOf(root, "alice")).toEqual([])

      yield* Deferred.succeed(gate, undefined)
      expect(yield* Queue.collect(client.arrived)).toEqual([
        { event: "text", data: { text: "noon." } },
        { event: "end", data: { reply: REPLY, stored: true, cancelled: false } }
      ])
      expect(historyOf(root, "alice")).toEqual([{ role: "user", content: "What time is it?" }, { role: "assistant", content: REPLY }])
    }))

  it.live("the 200 goes out with an `accepted` event once the message is journaled, before the brain has answered anything", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.gated(gate, AnthropicServer.streamedText("Noon."))))
      const { port, root } = yield* serve(server.url)
      // Run first at the end: a failed wait leaves no turn for the host's stop to wait on.
      yield* Effect.addFinalizer(() => Deferred.succeed(gate, undefined))
      const key = { "idempotency-key": "msg-7" }
      const client = yield* streamMessage(port, "dora", "What time is it?", key)
      // Bounded: before the acknowledgement, the 200 waited for the turn's first event, which the brain holds back.
      expect(yield* within("the stream's 200 while the brain holds its answer", "10 seconds")(client.answer))
        .toEqual({ status: 200, contentType: "text/event-stream" })
      expect(yield* Queue.take(client.arrived)).toEqual({ event: "accepted", data: { key: "msg-7" } })
      // Acknowledged means durable: the message is in the agent's journal; nothing is answered yet.
      expect(journalOf(root, "dora")).toContain("What time is it?")
      expect(historyOf(root, "dora")).toEqual([])

      // The client goes with nothing but the acknowledgement: the turn is answered anyway, and a retry gets it.
      yield* client.cut
      yield* server.awaitRequests(1).pipe(within("the turn's brain call"))
      yield* Deferred.succeed(gate, undefined)
      yield* eventually("the turn to be stored", () => historyOf(root, "dora").length === 2 ? true : undefined)
      const retried = yield* streamMessage(port, "dora", "What time is it?", key)
      expect(yield* Queue.collect(retried.arrived)).toEqual([
        { event: "accepted", data: { key: "msg-7" } },
        { event: "end", data: { reply: "Noon.", stored: true, cancelled: false } }
      ])
      expect(yield* server.turns).toHaveLength(1)
    }))

  it.live("`end` says whether the turn was cancelled; a model's reply of the cancellation's very text is an answer, kept under its key", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.hang, AnthropicServer.streamedText(TurnCancels.CANCELLED)))
      const { port, root } = yield* serve(server.url)
      const held = yield* streamMessage(port, "erin", "Book the table.", { "idempotency-key": "book" })
      expect(yield* Queue.take(held.arrived)).toEqual({ event: "accepted", data: { key: "book" } })
      yield* server.awaitRequests(1).pipe(within("the turn's brain call"))
      expect(yield* cancel(port, "erin", "book")).toEqual({ cancelled: true })
      expect(yield* Queue.collect(held.arrived)).toEqual([
        { event: "end", data: { reply: TurnCancels.CANCELLED, stored: false, cancelled: true } }
      ])

      // The same words written by the model: an answer, stored, and kept like any other.
      const said = { "idempotency-key": "say" }
      const answered = yield* streamMessage(port, "erin", "Say the cancellation line.", said)
      const end = { event: "end", data: { reply: TurnCancels.CANCELLED, stored: true, cancelled: false } }
      expect((yield* Queue.collect(answered.arrived)).at(-1)).toEqual(end)
      expect(historyOf(root, "erin")).toEqual([
        { role: "user", content: "Say the cancellation line." },
        { role: "assistant", content: TurnCancels.CANCELLED }
      ])
      const retried = yield* streamMessage(port, "erin", "Say the cancellation line.", said)
      expect(yield* Queue.collect(retried.arrived)).toEqual([{ event: "accepted", data: { key: "say" } }, end])
      // The held turn and the answer: the retry got the kept reply, not a second turn.
      expect(yield* server.turns).toHaveLength(2)
    }))

  it.live("without Accept: text/event-stream the answer is the JSON reply, as before", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Hello.")))
      const { port } = yield* serve(server.url)
      const answer = yield* postJson(port, "bob", "hi")
      expect(answer).toEqual({ status: 200, contentType: "application/json", body: { reply: "Hello.", stored: true } })
      // Events refused (q=0) or not listed: JSON too.
      for (const accept of ["text/event-stream;q=0", "application/json, text/*"]) {
        expect(yield* postJson(port, "bob", "hi", { accept })).toMatchObject({ status: 200, contentType: "application/json" })
      }
      // Refused before the agent takes it: the refusal's JSON, not a stream.
      const refused = yield* streamMessage(port, "Bad..Id", "hi")
      expect((yield* refused.answer).status).toBe(400)
    }))

  it.live("a client gone mid-turn loses nothing: the turn ends and is stored, a retry under its key gets the reply without a second brain call", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const server = yield* AnthropicServer.make(toolThenGated(gate))
      const { port, root } = yield* serve(server.url)
      const key = { "idempotency-key": "msg-1" }
      const client = yield* streamMessage(port, "carol", "What time is it?", key)
      expect(yield* Queue.take(client.arrived)).toEqual({ event: "accepted", data: { key: "msg-1" } })
      expect(yield* Queue.take(client.arrived)).toEqual({ event: "text", data: { text: "Let me " } })
      yield* client.cut
      // The health route answered on a new connection: the server has read the cut one's close by then.
      expect((yield* Effect.tryPromise(() => fetch(`http://127.0.0.1:${port}/v1/health`))).status).toBe(200)

      yield* Deferred.succeed(gate, undefined)
      const exchange = [{ role: "user", content: "What time is it?" }, { role: "assistant", content: REPLY }]
      yield* eventually("the turn to be stored", () => historyOf(root, "carol").length === 2 ? true : undefined)
      expect(historyOf(root, "carol")).toEqual(exchange)

      // Retried as JSON, then as a stream: the kept reply, as JSON and as the stream's `end` after its `accepted`.
      expect(yield* postJson(port, "carol", "What time is it?", key)).toEqual({
        status: 200,
        contentType: "application/json",
        body: { reply: REPLY, stored: true }
      })
      const retried = yield* streamMessage(port, "carol", "What time is it?", key)
      expect(yield* Queue.collect(retried.arrived)).toEqual([
        { event: "accepted", data: { key: "msg-1" } },
        { event: "end", data: { reply: REPLY, stored: true, cancelled: false } }
      ])
      // Two brain calls, both of the first turn (the tool call, then the answer).
      expect(yield* server.turns).toHaveLength(2)
      expect(historyOf(root, "carol")).toEqual(exchange)
    }))
})
