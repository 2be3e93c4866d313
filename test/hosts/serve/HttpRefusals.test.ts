/**
 * docs/serve.md's Errors, on every route of the API: a known path asked
 * with another method is a 405 with `Allow`, an id that is not valid
 * percent-encoding a 400 `bad-id` (the routes read from the API's
 * definition, so a route added there cannot be left out); and the refusals
 * of the cancel and AG-UI routes say, as JSON, what the client sent wrong;
 * a body sent compressed is refused naming its encoding; a request Node
 * cannot read gets a JSON problem too.
 */
import * as http from "node:http"
import * as zlib from "node:zlib"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpApi from "../../../src/hosts/serve/HttpApi.js"
import { Api } from "../../../src/hosts/serve/HttpApiDefinition.js"
import * as RawHttp from "../../support/RawHttp.js"
import { within } from "../../support/Sandbox.js"
import { echoBrain, hostLayer, settings, tempDir } from "./Kit.js"

interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: http.IncomingHttpHeaders
}

const call = (port: number, method: string, target: string, options: { body?: string | Buffer; headers?: Record<string, string> } = {}) =>
  Effect.callback<Answer>((resume) => {
    const request = http.request({ host: "127.0.0.1", port, method, path: target, headers: options.headers, agent: false }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), headers: response.headers })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end(options.body)
  })

/** The JSON problem of an answer: its status, `error` and `message` (a die if the body is not JSON). */
const problemOf = (answer: Answer) => {
  const body = JSON.parse(answer.text) as { error: unknown; message: unknown }
  return { status: answer.status, error: body.error, message: body.message }
}

const serve = () =>
  Effect.gen(function*() {
    const brain = echoBrain()
    const context = yield* Layer.build(
      HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(hostLayer(tempDir(), brain.layer)), Layer.provide(settings({})))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
    return { port: address.port, brain }
  })

/** Each path of the API (`:id` as `id`) with the methods it takes, from its definition. */
const routes = (id: string) => {
  const byPath = new Map<string, Set<string>>()
  for (const group of Object.values(Api.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      const path = endpoint.path.replace(":id", id)
      byPath.set(path, (byPath.get(path) ?? new Set()).add(endpoint.method))
    }
  }
  return [...byPath]
}

const agUiRun = (runId: string) =>
  JSON.stringify({ threadId: "t", runId, state: {}, tools: [], context: [], forwardedProps: {}, messages: [{ id: "m1", role: "user", content: "hello" }] })

describe("HTTP API refusals (docs/serve.md, Errors)", () => {
  it.live("every route asked with a method it does not take is a 405 with Allow naming the ones it takes", () =>
    Effect.gen(function*() {
      const { port } = yield* serve()
      const all = routes("a")
      expect(all.map(([path]) => path)).toEqual(expect.arrayContaining(["/v1/agents/a/cancel", "/v1/agents/a/ag-ui", "/v1/usage"]))
      for (const [path, methods] of all) {
        const method = ["GET", "POST", "DELETE"].find((candidate) => !methods.has(candidate))!
        const answer = yield* call(port, method, path)
        expect(`${method} ${path} -> ${answer.status}`).toBe(`${method} ${path} -> 405`)
        expect(problemOf(answer).error).toBe("method-not-allowed")
        expect(answer.headers["allow"]?.split(", ").sort()).toEqual([...methods].sort())
      }
    }))

  it.live("on every route with an agent id, one that is not valid percent-encoding is a 400 bad-id", () =>
    Effect.gen(function*() {
      const { port } = yield* serve()
      for (const id of ["%zz", "%E0%A4%A"]) {
        for (const [path, methods] of routes(id).filter(([path]) => path.includes(id))) {
          const method = [...methods][0]!
          const answer = yield* call(port, method, path, { headers: { "idempotency-key": "k", "content-type": "application/json" }, body: "{}" })
          expect(`${method} ${path} -> ${answer.status} ${problemOf(answer).error}`).toBe(`${method} ${path} -> 400 bad-id`)
        }
      }
    }))

  it.live("a cancel without its Idempotency-Key names the header it needs", () =>
    Effect.gen(function*() {
      const { port } = yield* serve()
      const answer = problemOf(yield* call(port, "POST", "/v1/agents/a/cancel"))
      expect(answer).toMatchObject({ status: 400, error: "bad-input" })
      expect(answer.message).toMatch(/Idempotency-Key header/)
    }))

  it.live("an AG-UI run not sent as JSON is the message route's 415, as JSON", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve()
      for (const contentType of ["text/plain", "application/json; charset=latin1"]) {
        const answer = yield* call(port, "POST", "/v1/agents/a/ag-ui", { body: agUiRun("r1"), headers: { "content-type": contentType } })
        expect(problemOf(answer)).toMatchObject({ status: 415, error: "unsupported-media-type" })
      }
      expect(brain.requests).toEqual([])
    }))

  it.live("a request Node cannot read (headers over its limit, not HTTP at all) is answered with its status and a JSON problem saying what was wrong", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve()
      const answerTo = (wire: string) =>
        Effect.gen(function*() {
          const connection = yield* RawHttp.connect(port)
          yield* connection.write(wire)
          const text = yield* within("the answer and the close")(connection.closed)
          const [head = "", body = ""] = text.split("\r\n\r\n")
          return { status: RawHttp.statuses(head), type: /content-type: (.*)/i.exec(head)?.[1], body: JSON.parse(body) as unknown }
        })
      expect(yield* answerTo(RawHttp.request("POST", "/v1/agents/a/messages", JSON.stringify({ text: "hi" }), { "x-padding": "p".repeat(20_000) })))
        .toEqual({
          status: [431],
          type: "application/json",
          body: { error: "headers-too-large", message: `the request's headers are over ${http.maxHeaderSize} bytes, the server's limit` }
        })
      expect(yield* answerTo("HELLO THERE\r\n\r\n")).toEqual({
        status: [400],
        type: "application/json",
        body: { error: "bad-request", message: "the request is not HTTP/1.1 this server can read (HPE_INVALID_METHOD)" }
      })
      expect(brain.requests).toEqual([])
    }).pipe(Effect.scoped))

  it.live("a body sent compressed (Content-Encoding: gzip) is a 415 naming the encoding, on the message and AG-UI routes, not read as its bytes", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve()
      for (const [target, body] of [["/v1/agents/a/messages", JSON.stringify({ text: "hello" })], ["/v1/agents/a/ag-ui", agUiRun("r1")]] as const) {
        const answer = yield* call(port, "POST", target, {
          body: zlib.gzipSync(body),
          headers: { "content-type": "application/json", "content-encoding": "gzip" }
        })
        expect(problemOf(answer), target).toEqual({
          status: 415,
          error: "unsupported-media-type",
          message: "the body must be sent as it is, without Content-Encoding (got \"gzip\")"
        })
      }
      expect(brain.requests).toEqual([])
      // identity is no encoding: read as it is.
      const plain = yield* call(port, "POST", "/v1/agents/a/messages", {
        body: JSON.stringify({ text: "hello" }),
        headers: { "content-type": "application/json", "content-encoding": "identity" }
      })
      expect([plain.status, JSON.parse(plain.text)]).toEqual([200, { reply: "echo hello", stored: true }])
    }))

  it.live("an AG-UI runId that cannot make its Idempotency-Key is refused naming runId, not a header the client never sent", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve()
      for (const runId of ["run 1", "r".repeat(195), ""]) {
        const answer = problemOf(yield* call(port, "POST", "/v1/agents/a/ag-ui", { body: agUiRun(runId), headers: { "content-type": "application/json" } }))
        expect(answer).toMatchObject({ status: 400, error: "bad-input" })
        expect(answer.message).toMatch(/^runId must be 1 to 194 visible ASCII characters/)
      }
      expect(brain.requests).toEqual([])
      // The longest runId that fits is run.
      const longest = yield* call(port, "POST", "/v1/agents/a/ag-ui", { body: agUiRun("r".repeat(194)), headers: { "content-type": "application/json" } })
      expect(longest.status).toBe(200)
      expect(longest.text).toContain("echo hello")
    }))

  it.live("an AG-UI run missing a field or holding one of the wrong type is refused naming where, as the message route names its field", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve()
      const run = JSON.parse(agUiRun("r1")) as Record<string, unknown>
      const { threadId: _threadId, ...withoutThread } = run
      const refusal = (body: unknown) =>
        Effect.map(call(port, "POST", "/v1/agents/a/ag-ui", { body: JSON.stringify(body), headers: { "content-type": "application/json" } }), problemOf)
      expect(yield* refusal(withoutThread)).toEqual({ status: 400, error: "bad-body", message: "Missing key (at threadId)" })
      expect(yield* refusal({ ...run, messages: [{ id: "m1", role: "user", content: 5 }] })).toMatchObject({
        status: 400,
        error: "bad-body",
        message: expect.stringMatching(/\(at messages\[0\](\.content)?\)$/)
      })
      expect(brain.requests).toEqual([])
      // The message route's own words, which name their field, are left as they are.
      expect(yield* Effect.map(call(port, "POST", "/v1/agents/a/messages", { body: JSON.stringify({ text: "hi", channel: 5 }), headers: { "content-type": "application/json" } }), problemOf))
        .toEqual({ status: 400, error: "bad-body", message: "\"channel\" must be a string" })
    }))

  it.live("an AG-UI run whose last user message holds no text (blank, or an image alone) is refused in the run's terms, not as a blank `text`", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve()
      const run = JSON.parse(agUiRun("r1")) as Record<string, unknown>
      for (const content of ["   ", [{ type: "binary", mimeType: "image/png", data: "AAAA" }]]) {
        const body = JSON.stringify({ ...run, messages: [{ id: "m1", role: "user", content }] })
        expect(problemOf(yield* call(port, "POST", "/v1/agents/a/ag-ui", { body, headers: { "content-type": "application/json" } }))).toEqual({
          status: 400,
          error: "bad-input",
          message: "the run's last user message holds no text (the agent reads text only, not an image or a file alone)"
        })
      }
      expect(brain.requests).toEqual([])
    }))
})
