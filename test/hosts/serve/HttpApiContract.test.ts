/**
 * The HTTP API as a contract: its OpenAPI document lists every route with
 * its statuses, its reference page is self-contained and behind the token,
 * and the exported typed client talks to a real `serve` on loopback.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpServer from "effect/http/HttpServer"
import { HttpApiClientOf, HttpApiDefinition, HttpApiErrors } from "../../../src/index.js"
import * as HttpApi from "../../../src/hosts/serve/HttpApi.js"
import { echoBrain, hostLayer, settings, tempDir } from "./Kit.js"

// Built at run time: no token-looking literal in the source.
const packageJson = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "..", "..", "..", "package.json"), "utf8")) as { version: string }

const TOKEN = `test-token-${Math.random().toString(36).slice(2)}`

const serve = (values: Record<string, string>) =>
  Effect.gen(function*() {
    const root = tempDir()
    const brain = echoBrain()
    const context = yield* Layer.build(
      HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(hostLayer(root, brain.layer, values)), Layer.provide(settings(values)))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    return { port: address._tag === "UnixPathAddress" ? 0 : address.port, brain }
  })

interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
}

const get = (port: number, target: string, headers: Record<string, string> = {}) =>
  Effect.callback<Answer>((resume) => {
    const request = http.request({ host: "127.0.0.1", port, method: "GET", path: target, headers, agent: false }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString("utf8") })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

/** A POST of `body` (sent as written) to `target`, JSON unless `headers` say otherwise. */
const post = (port: number, target: string, body: string, headers: Record<string, string> = {}) =>
  Effect.callback<Answer>((resume) => {
    const request = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: target,
      headers: { "content-type": "application/json", ...headers },
      agent: false
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString("utf8") })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end(body)
  })

const bearer = { authorization: `Bearer ${TOKEN}` }

/** Every route of the API: method, OpenAPI path, and the statuses it must declare. */
const ROUTES: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["get", "/v1/health", ["200", "403", "503"]],
  ["get", "/v1/agents", ["200", "400", "401", "403", "503"]],
  ["get", "/v1/agents/{id}", ["200", "400", "401", "403", "404", "503"]],
  ["post", "/v1/agents/{id}/messages", ["200", "400", "401", "403", "413", "415", "422", "503", "507"]],
  ["post", "/v1/agents/{id}/compact", ["200", "400", "401", "403", "404", "409", "502", "503", "507"]],
  ["post", "/v1/agents/{id}/cancel", ["200", "400", "401", "403", "404", "503"]],
  ["get", "/v1/agents/{id}/history", ["200", "400", "401", "403", "404", "503"]],
  ["get", "/v1/agents/{id}/usage", ["200", "400", "401", "403", "404", "503"]],
  ["get", "/v1/agents/{id}/memory", ["200", "400", "401", "403", "404", "503"]],
  ["get", "/v1/agents/{id}/schedules", ["200", "400", "401", "403", "404", "503"]],
  ["get", "/v1/usage", ["200", "400", "401", "403", "503"]],
  ["post", "/v1/agents/{id}/ag-ui", ["200", "400", "401", "403", "413", "415", "422", "503", "507"]],
  ["get", "/v1/openapi.json", ["200", "401", "403", "503"]],
  ["get", "/v1/docs", ["200", "401", "403", "503"]]
]

/** Every `$ref` in `value`. */
const refsIn = (value: unknown): Array<string> =>
  typeof value !== "object" || value === null
    ? []
    : Object.entries(value).flatMap(([key, item]) => key === "$ref" && typeof item === "string" ? [item] : refsIn(item))

describe("the HTTP API's contract", () => {
  it.live("serves an OpenAPI 3 document of every route, its statuses and the bearer token, behind the token", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ PLANCKCLAW_HTTP_TOKEN: TOKEN })
      expect((yield* get(port, "/v1/openapi.json")).status).toBe(401)
      const answer = yield* get(port, "/v1/openapi.json", bearer)
      expect(answer.status).toBe(200)
      expect(answer.headers["content-type"]).toMatch(/^application\/json/)
      const spec = JSON.parse(answer.text)
      expect(spec.openapi).toMatch(/^3\.\d+\.\d+$/)
      expect(typeof spec.info.title).toBe("string")
      // The package's version, as `planckclaw --version` and the MCP routes' serverInfo give it: not effect's default.
      expect(spec.info.version).toBe(packageJson.version)
      const listed = Object.entries(spec.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
        Object.keys(item).filter((method) => ["get", "post", "put", "patch", "delete"].includes(method)).map((method) => `${method} ${path}`)
      )
      expect(listed.sort()).toEqual(ROUTES.map(([method, path]) => `${method} ${path}`).sort())
      for (const [method, path, statuses] of ROUTES) {
        const operation = spec.paths[path][method]
        expect(Object.keys(operation.responses).sort(), `${method} ${path}`).toEqual([...statuses].sort())
        for (const status of statuses) expect(typeof operation.responses[status].description, `${method} ${path} ${status}`).toBe("string")
        // Every route but health needs the token.
        expect(operation.security ?? [], `${method} ${path}`).toEqual(path === "/v1/health" ? [] : [{ bearer: [] }])
        for (const parameter of operation.parameters ?? []) expect(path.includes(`{${parameter.name}}`) || parameter.in !== "path").toBe(true)
      }
      // An HTTP authentication scheme's name is case-insensitive (RFC 9110 11.1).
      expect(spec.components.securitySchemes.bearer.type).toBe("http")
      expect(spec.components.securitySchemes.bearer.scheme.toLowerCase()).toBe("bearer")
      // The message's body as the server checks it, and every reference resolvable within the document.
      const body = spec.paths["/v1/agents/{id}/messages"].post.requestBody
      expect(body.required).toBe(true)
      expect(Object.keys(body.content)).toEqual(["application/json"])
      // Its answer: the reply as JSON, or with Accept: text/event-stream the turn's events, each its data's Schema.
      const sent = spec.paths["/v1/agents/{id}/messages"].post
      expect(Object.keys(sent.responses["200"].content).sort()).toEqual(["application/json", "text/event-stream"])
      expect(sent.parameters.filter((parameter: { in: string }) => parameter.in === "header").map((parameter: { name: string }) => parameter.name).sort())
        .toEqual(["accept", "idempotency-key"])
      const stream = sent.responses["200"].content["text/event-stream"]
      expect(stream["x-effect-stream"].encoding).toBe("sse")
      const told = Object.fromEntries(
        (stream.schema.anyOf as Array<{ properties: { event: { enum: Array<string> }; data: { contentSchema: { required: Array<string> } } } }>)
          .map(({ properties }) => [properties.event.enum.join(), properties.data.contentSchema.required])
      )
      expect(told).toEqual({ accepted: ["key"], text: ["text"], tool: ["name", "input"], "tool-result": ["name", "ok", "ms"], end: ["reply", "stored", "cancelled"] })
      for (const ref of refsIn(spec)) {
        expect(ref, ref).toMatch(/^#\/components\/schemas\//)
        expect(spec.components.schemas[ref.slice("#/components/schemas/".length)], ref).toBeDefined()
      }
    }))

  it.live("a message's Schema refuses it once, saying what was wrong, before the agent is started", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve({})
      const cases: Array<[string, string, Record<string, string>, string, string]> = [
        ["/v1/agents/a/messages", "{}", {}, "bad-body", "the body needs \"text\", a string"],
        ["/v1/agents/a/messages", JSON.stringify({ text: 5 }), {}, "bad-body", "the body needs \"text\", a string"],
        ["/v1/agents/a/messages", "[1]", {}, "bad-body", "the body must be a JSON object"],
        ["/v1/agents/a/messages", "", {}, "bad-json", "the body is not JSON"],
        ["/v1/agents/a/messages", JSON.stringify({ text: " \n" }), {}, "bad-body", "\"text\" is blank: there is nothing to answer"],
        ["/v1/agents/a/messages", JSON.stringify({ text: "x", channel: 5 }), {}, "bad-body", "\"channel\" must be a string"],
        ["/v1/agents/a/messages", "{\"text\":\"half \\ud83d\"}", {}, "bad-body", "\"text\" holds a lone UTF-16 surrogate (\\ud83d at character 6)"],
        ["/v1/agents/a/messages", "{\"text\":\"x\",\"channel\":\"\\udc00\"}", {}, "bad-body", "\"channel\" holds a lone UTF-16 surrogate"],
        ["/v1/agents/a/messages", JSON.stringify({ text: "x" }), { "idempotency-key": "has space" }, "bad-input", "Idempotency-Key must be 1 to 200 visible ASCII"],
        ["/v1/agents/Bob/messages", JSON.stringify({ text: "x" }), {}, "bad-id", "agent id \"Bob\" is not allowed: an id must match"]
      ]
      for (const [target, body, headers, error, message] of cases) {
        const answer = yield* post(port, target, body, headers)
        expect(answer.status, body).toBe(400)
        const refusal = JSON.parse(answer.text)
        expect(Object.keys(refusal), body).toEqual(["error", "message"])
        expect(refusal.error, body).toBe(error)
        expect(refusal.message, body).toContain(message)
        expect(refusal.message.length, body).toBeLessThanOrEqual(500)
      }
      expect(brain.requests).toEqual([])
    }))

  it.live("serves a reference page behind the token that loads nothing: no script, no external URL, a strict CSP", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ PLANCKCLAW_HTTP_TOKEN: TOKEN })
      expect((yield* get(port, "/v1/docs")).status).toBe(401)
      expect((yield* get(port, "/v1/docs", { authorization: "Bearer wrong" })).status).toBe(401)
      const page = yield* get(port, "/v1/docs", bearer)
      expect(page.status).toBe(200)
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
      const csp = String(page.headers["content-security-policy"])
      expect(csp).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+';/)
      expect(csp).not.toMatch(/script-src|unsafe|\*/)
      expect(page.text).not.toMatch(/<script|https?:\/\/|\/\/[a-z0-9.-]+\.[a-z]{2,}|@import|url\(/i)
      for (const [method, path] of ROUTES) expect(page.text).toContain(`${method.toUpperCase()}</span> <code>${path}</code>`)
      // A web page's request for it is refused like any other.
      expect((yield* get(port, "/v1/docs", { ...bearer, origin: "http://evil.example" })).status).toBe(403)
    }))

  it.live("the exported typed client sends a message, reads an agent, and gets refusals as their error classes", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve({ PLANCKCLAW_HTTP_TOKEN: TOKEN })
      const baseUrl = `http://127.0.0.1:${port}`
      const client = yield* HttpApiClientOf.make({ baseUrl, token: TOKEN })
      expect(yield* client.health()).toEqual({ status: "ok" })
      const reply = yield* client.agents.send({ params: { id: "alice" }, headers: { "idempotency-key": "k-1" }, payload: { text: "hello" } })
      expect(reply).toEqual({ reply: "echo hello", stored: true })
      const again = yield* client.agents.send({ params: { id: "alice" }, headers: { "idempotency-key": "k-1" }, payload: { text: "hello" } })
      expect(again).toEqual(reply)
      expect(brain.requests.length).toBe(1)
      expect(yield* client.agents.get({ params: { id: "alice" } })).toMatchObject({ id: "alice", historyLines: 2, state: "running" })
      const page = yield* client.agents.list({ query: { limit: "10" } })
      expect([page.agents.map((agent) => agent.id), page.next]).toEqual([["alice"], null])
      const missing = yield* Effect.flip(client.agents.get({ params: { id: "nobody" } }))
      expect(missing).toBeInstanceOf(HttpApiErrors.NotFound)
      expect(missing).toMatchObject({ error: "not-found" })
      const reused = yield* Effect.flip(client.agents.send({ params: { id: "alice" }, headers: { "idempotency-key": "k-1" }, payload: { text: "other" } }))
      expect(reused).toMatchObject({ error: "key-reused" })
      expect(reused).toBeInstanceOf(HttpApiErrors.UnprocessableEntity)
      const spec = yield* client.docs.openapi()
      expect(Object.keys(spec["paths"] as object)).toContain("/v1/agents/{id}/messages")
      const anonymous = yield* HttpApiClientOf.make({ baseUrl })
      const refused = yield* Effect.flip(anonymous.agents.list({ query: {} }))
      expect(refused).toBeInstanceOf(HttpApiErrors.Unauthorized)
      expect(HttpApiDefinition.Api).toBeDefined()
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})
