import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { type Config, Context, Effect, Result, Layer } from "effect"
import * as HttpServer from "effect/http/HttpServer"
import { describe as describeConfigError } from "../../../src/config/ConfigErrors.js"
import * as HttpApi from "../../../src/hosts/serve/HttpApi.js"
import { echoBrain, hostLayer, historyOf, settings, tempDir } from "./Kit.js"

interface Answer {
  readonly status: number
  readonly body: any
}

/** One request with node:http, the path sent exactly as written (no URL normalisation); with the answer's headers. */
const callWithHeaders = (port: number, method: string, target: string, options: { body?: string; headers?: Record<string, string> } = {}) =>
  Effect.callback<Answer & { readonly headers: http.IncomingHttpHeaders }>((resume) => {
    const request = http.request({ host: "127.0.0.1", port, method, path: target, headers: options.headers, agent: keepAlive }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resume(Effect.succeed({ status: response.statusCode ?? 0, body: text.length > 0 ? JSON.parse(text) : undefined, headers: response.headers }))
      })
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end(options.body)
  })
const call = (port: number, method: string, target: string, options: { body?: string; headers?: Record<string, string> } = {}) =>
  Effect.map(callWithHeaders(port, method, target, options), ({ body, status }): Answer => ({ status, body }))
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 32 })

const post = (port: number, target: string, body: unknown, headers: Record<string, string> = {}) =>
  call(port, "POST", target, { body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json", ...headers } })

/** The API on a free loopback port over a fresh host; returns the port and the root directory. */
const serve = (values: Record<string, string> = {}, brain = echoBrain()) =>
  Effect.gen(function*() {
    const root = tempDir()
    const context = yield* Layer.build(
      HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(
        Layer.provide(hostLayer(root, brain.layer, values)),
        Layer.provide(settings(values))
      )
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
    return { port: address.port, root, brain }
  })

describe("HTTP API", () => {
  it.live("answers messages for many agents at once, each in order", () =>
    Effect.gen(function*() {
      const { port, root } = yield* serve()
      const ids = Array.from({ length: 10 }, (_, n) => `a${n}`)
      const answers = yield* Effect.forEach(ids, (id) =>
        Effect.forEach([0, 1, 2, 3], (n) => post(port, `/v1/agents/${id}/messages`, { text: `${id}#${n}`, channel: "c" }), { concurrency: "unbounded" }),
        { concurrency: "unbounded" })
      answers.forEach((perAgent, index) =>
        perAgent.forEach((answer, n) => expect(answer).toEqual({ status: 200, body: { reply: `echo ${ids[index]}#${n}`, stored: true } }))
      )
      for (const id of ids) {
        expect(historyOf(root, id).filter((line) => line.role === "user").map((line) => line.content)).toEqual([0, 1, 2, 3].map((n) => `${id}#${n}`))
      }
      const listed = yield* call(port, "GET", "/v1/agents")
      expect(listed.status).toBe(200)
      expect(listed.body.agents.map((agent: any) => agent.id)).toEqual(ids)
      expect(listed.body.next).toBeNull()
      expect(listed.body.agents[0]).toMatchObject({ id: "a0", historyLines: 8, summaryBytes: 0, state: "running" })
      expect(typeof listed.body.agents[0].lastMessageAt).toBe("string")
      const first = yield* call(port, "GET", "/v1/agents?limit=4")
      expect([first.body.agents.map((agent: any) => agent.id), first.body.next]).toEqual([["a0", "a1", "a2", "a3"], "a3"])
      const second = yield* call(port, "GET", `/v1/agents?after=${first.body.next}&limit=4`)
      expect([second.body.agents.map((agent: any) => agent.id), second.body.next]).toEqual([["a4", "a5", "a6", "a7"], "a7"])
      const last = yield* call(port, "GET", "/v1/agents?limit=4&after=a7")
      expect([last.body.agents.map((agent: any) => agent.id), last.body.next]).toEqual([["a8", "a9"], null])
      expect((yield* call(port, "GET", "/v1/agents/a3")).body).toMatchObject({ id: "a3", historyLines: 8 })
      expect((yield* call(port, "GET", "/v1/agents/nobody")).status).toBe(404)
      expect(yield* call(port, "GET", "/v1/health")).toEqual({ status: 200, body: { status: "ok" } })
    }))

  it.live("replays a reply for a repeated Idempotency-Key, and compacts on request", () =>
    Effect.gen(function*() {
      const { brain, port, root } = yield* serve({ HISTORY_KEEP: "2" })
      const first = yield* post(port, "/v1/agents/k/messages", { text: "once" }, { "idempotency-key": "abc-1" })
      const again = yield* post(port, "/v1/agents/k/messages", { text: "once" }, { "idempotency-key": "abc-1" })
      expect(again).toEqual(first)
      expect(first.body).toEqual({ reply: "echo once", stored: true })
      expect(brain.requests.length).toBe(1)
      // The same key with another message: 422, not the first message's reply.
      const reused = yield* post(port, "/v1/agents/k/messages", { text: "something else" }, { "idempotency-key": "abc-1" })
      expect(reused.status).toBe(422)
      expect(reused.body).toMatchObject({ error: "key-reused" })
      expect(brain.requests.length).toBe(1)
      yield* post(port, "/v1/agents/k/messages", { text: "twice" })
      const compacted = yield* call(port, "POST", "/v1/agents/k/compact")
      expect(compacted).toEqual({ status: 200, body: { compacted: true, summarised: 2, kept: 2, summaryBytes: 10 } })
      expect(fs.readFileSync(path.join(root, "agents", "k", "summary.md"), "utf8")).toBe("a summary\n")
      const badKey = yield* post(port, "/v1/agents/k/messages", { text: "x" }, { "idempotency-key": "has space" })
      expect(badKey.status).toBe(400)
    }))

  it.live("refuses a listing's bad query, saying what is wrong with it", () =>
    Effect.gen(function*() {
      const { port } = yield* serve()
      const cases: Array<[string, string]> = [
        ["limit=0", "limit must be an integer from 1 to 1000, got \"0\""],
        ["limit=1001", "limit must be an integer from 1 to 1000, got \"1001\""],
        ["limit=ten", "limit must be an integer from 1 to 1000, got \"ten\""],
        ["limit=-5", "limit must be an integer from 1 to 1000, got \"-5\""],
        ["limit=", "limit must be an integer from 1 to 1000, got \"\""],
        ["limit=2&limit=3", "limit, after and search may each be given once"],
        ["after=Alice", "after: agent id \"Alice\" is not allowed"],
        ["page=2", "unknown query parameter \"page\"; GET /v1/agents takes limit, after and search"]
      ]
      for (const [query, message] of cases) {
        const answer = yield* call(port, "GET", `/v1/agents?${query}`)
        expect(answer.status, query).toBe(400)
        expect(answer.body.error, query).toBe("bad-query")
        expect(answer.body.message, query).toContain(message)
      }
      expect((yield* call(port, "GET", "/v1/agents?limit=1000")).body).toEqual({ agents: [], next: null })
    }))

  it.live("an unknown query parameter of the history and usage routes is named, with what the route takes", () =>
    Effect.gen(function*() {
      const { port } = yield* serve()
      expect((yield* post(port, "/v1/agents/a/messages", { text: "hi" })).status).toBe(200)
      const cases: Array<[string, string]> = [
        ["/v1/agents/a/history?page=2", "unknown query parameter \"page\": this route takes before and limit"],
        ["/v1/agents/a/usage?untill=2026-01-01", "unknown query parameter \"untill\": this route takes since and until"],
        ["/v1/usage?from=2026-01-01", "unknown query parameter \"from\": this route takes since and until"]
      ]
      for (const [target, message] of cases) {
        const answer = yield* call(port, "GET", target)
        expect([answer.status, answer.body.error, answer.body.message], target).toEqual([400, "bad-query", message])
      }
    }))

  it.live("refuses bad input with a JSON error and leaves memory untouched", () =>
    Effect.gen(function*() {
      const { brain, port, root } = yield* serve({ PLANCKCLAW_MAX_MESSAGE_BYTES: "100" })
      const cases: Array<[Effect.Effect<Answer>, number, string]> = [
        [post(port, "/v1/agents/a/messages", "{not json"), 400, "bad-json"],
        [post(port, "/v1/agents/a/messages", { channel: "x" }), 400, "bad-body"],
        [post(port, "/v1/agents/a/messages", { text: 5 }), 400, "bad-body"],
        [post(port, "/v1/agents/a/messages", "[1]"), 400, "bad-body"],
        [post(port, "/v1/agents/a/messages", { text: "x", channel: "bad\u0001" }), 400, "bad-input"],
        [post(port, "/v1/agents/A/messages", { text: "x" }), 400, "bad-id"],
        [post(port, "/v1/agents/%2E%2E/messages", { text: "x" }), 400, "bad-id"],
        [post(port, "/v1/agents/a%2Fb/messages", { text: "x" }), 400, "bad-id"],
        [post(port, "/v1/agents/a/messages", { text: "é".repeat(51) }), 413, "too-large"],
        [post(port, "/v1/agents/a/messages", "x".repeat(5000)), 413, "too-large"],
        [post(port, "/v1/agents/a/messages", { text: " \t\n" }), 400, "bad-body"],
        [post(port, "/v1/agents/a%ff/messages", { text: "x" }), 400, "bad-id"],
        [post(port, "/v1/agents/%/messages", { text: "x" }), 400, "bad-id"],
        [post(port, `/v1/agents/${"a".repeat(5000)}/messages`, { text: "x" }), 400, "bad-id"],
        [post(port, "/v1/agents/a/messages", { text: "x" }, { "content-type": "text/plain" }), 415, "unsupported-media-type"],
        [post(port, "/v1/agents/a/messages", { text: "x" }, { "content-type": "application/json; charset=latin1" }), 415, "unsupported-media-type"],
        [call(port, "GET", "/v1/nowhere"), 404, "not-found"],
        [call(port, "DELETE", "/v1/agents/a"), 405, "method-not-allowed"],
        [call(port, "GET", "/v1/agents/a/messages"), 405, "method-not-allowed"]
      ]
      for (const [request, status, error] of cases) {
        const answer = yield* request
        expect(answer.status, JSON.stringify(answer.body)).toBe(status)
        expect(answer.body.error).toBe(error)
        expect(typeof answer.body.message).toBe("string")
      }
      expect((yield* callWithHeaders(port, "PUT", "/v1/agents/a")).headers["allow"]).toBe("GET")
      expect((yield* callWithHeaders(port, "POST", "/v1/health")).headers["allow"]).toBe("GET")
      // A chunked body (no Content-Length) over the limit is cut off while reading.
      const chunked = yield* call(port, "POST", "/v1/agents/a/messages", {
        body: JSON.stringify({ text: "y".repeat(5000) }),
        headers: { "transfer-encoding": "chunked", "content-type": "application/json" }
      })
      expect(chunked.status).toBe(413)
      expect(brain.requests).toEqual([])
      expect(fs.readdirSync(path.join(root, "agents"))).toEqual([])
    }))

  it.live("refuses requests from web pages and, without a token, to names that are not loopback", () =>
    Effect.gen(function*() {
      const { brain, port, root } = yield* serve()
      // A page's cross-site POST needs no preflight when it is text/plain; it carries Origin.
      const page = yield* call(port, "POST", "/v1/agents/a/messages", {
        body: JSON.stringify({ text: "from a web page" }),
        headers: { origin: "http://evil.example", "content-type": "text/plain" }
      })
      expect(page.status).toBe(403)
      expect(page.body.error).toBe("cross-origin")
      expect((yield* call(port, "GET", "/v1/agents", { headers: { origin: "null" } })).status).toBe(403)
      // DNS rebinding: the page's own name, resolved to 127.0.0.1.
      const rebound = yield* call(port, "GET", "/v1/agents", { headers: { host: "attacker.example:7878" } })
      expect(rebound.status).toBe(403)
      expect(rebound.body.error).toBe("bad-host")
      for (const host of [`localhost:${port}`, `LOCALHOST:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, "localhost"]) {
        expect((yield* call(port, "GET", "/v1/agents", { headers: { host } })).status, host).toBe(200)
      }
      expect(brain.requests).toEqual([])
      expect(fs.existsSync(path.join(root, "agents", "a"))).toBe(false)
    }))

  it.live("with a token, answers any Host name (the token is what guards it)", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ PLANCKCLAW_HTTP_TOKEN: "s3cret" })
      const answer = yield* call(port, "GET", "/v1/agents", { headers: { host: "agents.example.org", authorization: "Bearer s3cret" } })
      expect(answer.status).toBe(200)
    }))

  it.live("needs the bearer token on every route but /v1/health", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve({ PLANCKCLAW_HTTP_TOKEN: "s3cret" })
      expect((yield* call(port, "GET", "/v1/health")).status).toBe(200)
      for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "s3cret" }, { authorization: "Bearer s3cret2" }]) {
        expect((yield* post(port, "/v1/agents/a/messages", { text: "hi" }, headers)).status).toBe(401)
        expect((yield* call(port, "GET", "/v1/agents", { headers })).status).toBe(401)
      }
      const refused = yield* callWithHeaders(port, "GET", "/v1/agents")
      expect(refused.headers["www-authenticate"]).toBe("Bearer realm=\"planckclaw\"")
      expect(brain.requests).toEqual([])
      const ok = yield* post(port, "/v1/agents/a/messages", { text: "hi" }, { authorization: "Bearer s3cret" })
      expect(ok).toEqual({ status: 200, body: { reply: "echo hi", stored: true } })
      // The scheme is case-insensitive in HTTP.
      expect((yield* call(port, "GET", "/v1/agents", { headers: { authorization: "bearer s3cret" } })).status).toBe(200)
    }))

  it.live("refuses to listen on a non-loopback address without a token", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const refused = yield* Effect.flip(Layer.build(
        HttpApi.layer({ host: "0.0.0.0", port: 0 }).pipe(Layer.provide(hostLayer(root, echoBrain().layer)), Layer.provide(settings({})))
      ))
      expect(refused._tag).toBe("HttpListenRefused")
      expect(Result.getOrThrow(HttpApi.parseListen("[::1]:7878"))).toEqual({ host: "::1", port: 7878 })
      expect(Result.isFailure(HttpApi.parseListen("localhost"))).toBe(true)
      expect(HttpApi.isLoopback("127.0.0.1") && HttpApi.isLoopback("::1") && !HttpApi.isLoopback("192.168.1.2")).toBe(true)
    }))

  it.effect("refuses a token of white space only, which no client could send, naming the setting", () =>
    Effect.gen(function*() {
      for (const [token, host] of [["   ", "0.0.0.0"], [" \t ", "0.0.0.0"], ["  ", "127.0.0.1"]] as const) {
        const refused = yield* Effect.flip(HttpApi.guard({ host, port: 0 }).pipe(Effect.provide(settings({ PLANCKCLAW_HTTP_TOKEN: token }))))
        expect(refused._tag).toBe("ConfigError")
        expect(describeConfigError(refused as Config.ConfigError)).toMatch(/^configuration error: PLANCKCLAW_HTTP_TOKEN: is only white space/)
      }
      // Empty is no token: loopback only, as before.
      const open = yield* Effect.flip(HttpApi.guard({ host: "0.0.0.0", port: 0 }).pipe(Effect.provide(settings({ PLANCKCLAW_HTTP_TOKEN: "" }))))
      expect(open._tag).toBe("HttpListenRefused")
    }))

  it.effect("refuses a token beyond printable ASCII, which clients send differently in a header or not at all, naming the setting but not the token", () =>
    Effect.gen(function*() {
      for (const [token, position] of [["pässwort", 2], ["Ωmega-key", 1], ["key\u0000tail", 4], ["two\nlines", 4]] as const) {
        const refused = yield* Effect.flip(HttpApi.guard({ host: "0.0.0.0", port: 0 }).pipe(Effect.provide(settings({ PLANCKCLAW_HTTP_TOKEN: token }))))
        expect(refused._tag).toBe("ConfigError")
        const said = describeConfigError(refused as Config.ConfigError)
        expect(said).toMatch(new RegExp(`^configuration error: PLANCKCLAW_HTTP_TOKEN: holds a character at position ${position} that is not printable ASCII`))
        expect(said).not.toContain(token)
      }
      // Spaces and ASCII punctuation inside it are sent alike by every client: taken.
      const taken = yield* Effect.exit(HttpApi.guard({ host: "0.0.0.0", port: 0 }).pipe(Effect.provide(settings({ PLANCKCLAW_HTTP_TOKEN: "my s3cret: ~!{}" }))))
      expect(taken._tag).toBe("Success")
    }))

  it.live("drops the spaces around the token, as HTTP drops them around the header's value", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ PLANCKCLAW_HTTP_TOKEN: " s3cret  " })
      expect((yield* call(port, "GET", "/v1/agents", { headers: { authorization: "Bearer s3cret" } })).status).toBe(200)
      expect((yield* call(port, "GET", "/v1/agents", { headers: { authorization: "Bearer  s3cret " } })).status).toBe(200)
    }))
})
