/**
 * How large a body each route takes (HttpBodyLimits), and the limit of a
 * message (docs/serve.md): a body over its route's cap is a 413 JSON
 * problem answered before the body is read whole, whether its size was
 * declared or it comes in chunks; the host's PLANCKCLAW_MAX_MESSAGE_BYTES
 * caps every message, and an agent's own config.env may lower it (a 413
 * naming it), never raise it. A body must be UTF-8, JSON's encoding: one
 * that is not is refused, never read with its bytes replaced. A client
 * that waits for `100 Continue` before sending its body is told at once.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpApi from "../../../src/hosts/serve/HttpApi.js"
import { agUiBodyLimit, mcpBodyLimit } from "../../../src/hosts/serve/HttpBodyLimits.js"
import { captureLogs } from "../../support/LogCapture.js"
import { within } from "../../support/Sandbox.js"
import { echoBrain, historyOf, hostLayer, settings, tempDir } from "./Kit.js"

interface Answer {
  readonly status: number
  readonly text: string
}

const serve = (values: Record<string, string>, before: (root: string) => void = () => {}) =>
  Effect.gen(function*() {
    const root = tempDir()
    before(root)
    const brain = echoBrain()
    const context = yield* Layer.build(
      HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(hostLayer(root, brain.layer, values)), Layer.provide(settings(values)))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
    return { port: address.port, root, brain }
  })

/**
 * A POST that sends `sent` bytes of its body and never ends it: the answer
 * can only come if the server answers before reading the body whole. With
 * `declared`, the body is announced at that length; without, it is chunked.
 */
const postUnfinished = (port: number, target: string, options: { readonly sent: number; readonly declared?: number }) =>
  Effect.callback<Answer>((resume) => {
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(options.declared === undefined ? { "transfer-encoding": "chunked" } : { "content-length": options.declared })
    }
    const request = http.request({ host: "127.0.0.1", port, method: "POST", path: target, headers, agent: false }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        request.destroy()
        resume(Effect.succeed({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
      })
    })
    // The server closes the connection after its answer: the rest of the body cannot be sent.
    request.on("error", () => {})
    const chunk = Buffer.alloc(64 * 1024, "x")
    for (let left = options.sent; left > 0; left -= chunk.length) request.write(left >= chunk.length ? chunk : chunk.subarray(0, left))
    return Effect.sync(() => request.destroy())
  })

const post = (port: number, target: string, body: string | Buffer) =>
  Effect.callback<Answer>((resume) => {
    const request = http.request(
      { host: "127.0.0.1", port, method: "POST", path: target, headers: { "content-type": "application/json" }, agent: false },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") })))
      }
    )
    request.on("error", (error) => resume(Effect.die(error)))
    request.end(body)
  })

/**
 * A POST whose body is sent only once the server says to (Expect: 100-continue, as curl asks with a large
 * body): without a `100 Continue` it is never sent, and the server's request timeout answers.
 */
const postExpecting = (port: number, target: string, body: string, headers: Record<string, string> = {}) =>
  Effect.callback<Answer & { readonly continued: boolean }>((resume) => {
    let continued = false
    const request = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: target,
      headers: { "content-type": "application/json", expect: "100-continue", ...headers },
      agent: false
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), continued })))
    })
    request.on("continue", () => {
      continued = true
      request.end(body)
    })
    // Refused on its headers, the body is never asked for: the connection closes after the answer.
    request.on("error", () => {})
    request.flushHeaders()
    return Effect.sync(() => request.destroy())
  })

const tooLarge = (answer: Answer) => {
  expect(answer.status).toBe(413)
  const body = JSON.parse(answer.text) as { error: string; message: string }
  expect(body.error).toBe("too-large")
  return body.message
}

describe("HTTP body limits", () => {
  it.live("an AG-UI run or an MCP request over its cap is a 413 before its body is read, declared or chunked", () =>
    Effect.gen(function*() {
      const { brain, port } = yield* serve({ PLANCKCLAW_MAX_MESSAGE_BYTES: "1000" })
      for (const [target, cap] of [["/v1/agents/a/ag-ui", agUiBodyLimit(1000)], ["/v1/mcp", mcpBodyLimit(1000)]] as const) {
        // Announced far over the cap: refused on its headers alone.
        expect(tooLarge(yield* postUnfinished(port, target, { sent: 1, declared: 300 * 1024 * 1024 }))).toContain(`over ${cap} bytes`)
        // Chunked: read up to the cap, then refused while the client is still sending.
        expect(tooLarge(yield* postUnfinished(port, target, { sent: cap + 1 }))).toContain("PLANCKCLAW_MAX_MESSAGE_BYTES")
      }
      expect(brain.requests).toEqual([])
    }))

  it.live("an AG-UI run under its cap, though larger than a message's body, is read whole and answered", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ PLANCKCLAW_MAX_MESSAGE_BYTES: "1000" })
      // An earlier conversation the client sends again, larger than one message's body (6 × 1000 + 4096).
      const earlier = Array.from({ length: 8 }, (_, index) => ({ id: `a${index}`, role: "assistant", content: "z".repeat(1500) }))
      const run = yield* post(port, "/v1/agents/a/ag-ui", JSON.stringify({
        threadId: "t",
        runId: "r1",
        state: {},
        tools: [],
        context: [],
        forwardedProps: {},
        messages: [...earlier, { id: "m1", role: "user", content: "hello" }]
      }))
      expect(run.status).toBe(200)
      expect(run.text).toContain("echo hello")
    }))

  it.live("an agent's own lower limit refuses its larger messages with a 413 naming its config.env; nothing is journaled", () =>
    Effect.gen(function*() {
      const { brain, port, root } = yield* serve({ PLANCKCLAW_MAX_MESSAGE_BYTES: "1000" }, (root) => {
        fs.mkdirSync(path.join(root, "agents", "small"), { recursive: true, mode: 0o700 })
        fs.writeFileSync(path.join(root, "agents", "small", "config.env"), "PLANCKCLAW_MAX_MESSAGE_BYTES=10\n", { mode: 0o600 })
      })
      const message = tooLarge(yield* post(port, "/v1/agents/small/messages", JSON.stringify({ text: "y".repeat(20) })))
      expect(message).toBe("the message is 20 bytes; agent small takes at most 10 (PLANCKCLAW_MAX_MESSAGE_BYTES in its config.env)")
      expect(brain.requests).toEqual([])
      // Within its limit: answered.
      expect((yield* post(port, "/v1/agents/small/messages", JSON.stringify({ text: "short" }))).status).toBe(200)
      expect(historyOf(root, "small").map((entry) => entry.content)).toEqual(["short", "echo short"])
    }))

  it.live("an agent's own limit above the host's does not raise it: the host's caps every message, and the agent's start warns", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      yield* Effect.gen(function*() {
        const { brain, port } = yield* serve({ PLANCKCLAW_MAX_MESSAGE_BYTES: "1000" }, (root) => {
          fs.mkdirSync(path.join(root, "agents", "big"), { recursive: true, mode: 0o700 })
          fs.writeFileSync(path.join(root, "agents", "big", "config.env"), "PLANCKCLAW_MAX_MESSAGE_BYTES=4000\n", { mode: 0o600 })
        })
        const message = tooLarge(yield* post(port, "/v1/agents/big/messages", JSON.stringify({ text: "y".repeat(2000) })))
        expect(message).toBe("the message is 2000 bytes; the limit is 1000 (the host's PLANCKCLAW_MAX_MESSAGE_BYTES)")
        expect(brain.requests).toEqual([])
        expect((yield* post(port, "/v1/agents/big/messages", JSON.stringify({ text: "hi" }))).status).toBe(200)
        expect(logs.lines.filter((line) => line.startsWith("WARN"))).toEqual([
          "WARN agent big: PLANCKCLAW_MAX_MESSAGE_BYTES 4000 in its config.env is over the host's 1000, which caps every agent's: " +
          "its messages are held to 1000 bytes (an agent's own value can only lower the host's)"
        ])
      }).pipe(Effect.scoped, Effect.provide(logs.layer))
    }))

  it.live("a body that is not UTF-8 (Latin-1's é) is a 400 bad-body on every route that reads one, nothing journaled; one led by a byte order mark is read", () =>
    Effect.gen(function*() {
      const { brain, port, root } = yield* serve({})
      const latin1 = (json: string) => Buffer.from(json, "latin1")
      const run = JSON.stringify({
        threadId: "t", runId: "r1", state: {}, tools: [], context: [], forwardedProps: {},
        messages: [{ id: "m1", role: "user", content: "café" }]
      })
      const ask = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ask_agent", arguments: { agent: "cafe", text: "café" } } })
      for (const [target, body] of [["/v1/agents/cafe/messages", JSON.stringify({ text: "café" })], ["/v1/agents/cafe/ag-ui", run], ["/v1/mcp", ask]]) {
        const answer = yield* post(port, target!, latin1(body!))
        expect(answer.status, target).toBe(400)
        expect(JSON.parse(answer.text), target).toEqual({
          error: "bad-body",
          message: "the body is not valid UTF-8 (a byte of another encoding, such as Latin-1 or Windows-1252): send the JSON in UTF-8"
        })
      }
      expect(brain.requests).toEqual([])
      expect(historyOf(root, "cafe")).toEqual([])
      // The same text in UTF-8, and after a byte order mark (as some Windows tools write it): read as sent.
      expect(yield* post(port, "/v1/agents/cafe/messages", JSON.stringify({ text: "café" }))).toEqual({ status: 200, text: JSON.stringify({ reply: "echo café", stored: true }) })
      const marked = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ text: "thé" }))])
      expect(yield* post(port, "/v1/agents/cafe/messages", marked)).toEqual({ status: 200, text: JSON.stringify({ reply: "echo thé", stored: true }) })
      expect(historyOf(root, "cafe").map((entry) => entry.content)).toEqual(["café", "echo café", "thé", "echo thé"])
    }))

  it.live("a client waiting for 100 Continue before its body (Expect: 100-continue) is told at once and answered; one announcing a body over the limit gets the 413 instead", () =>
    Effect.gen(function*() {
      const { port } = yield* serve({ PLANCKCLAW_MAX_MESSAGE_BYTES: "1000" })
      const sent = yield* within("the message's answer")(postExpecting(port, "/v1/agents/eager/messages", JSON.stringify({ text: "y".repeat(900) })))
      expect(sent).toEqual({ status: 200, text: JSON.stringify({ reply: `echo ${"y".repeat(900)}`, stored: true }), continued: true })
      const over = yield* within("the refusal")(
        postExpecting(port, "/v1/agents/eager/messages", "{}", { "content-length": String(300 * 1024 * 1024) })
      )
      expect([over.status, over.continued, JSON.parse(over.text).error]).toEqual([413, false, "too-large"])
    }))
})
