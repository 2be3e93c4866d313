/**
 * A model server on loopback for bench/brain-call.mjs, in a process of its
 * own so its CPU is not counted: a node:http server (keep-alive) that reads
 * each request whole, checks it is a request of the API it was sent to, and
 * answers at once with a fixed answer:
 *
 * - POST …/v1/messages: a Messages API response (text "Noted.", end_turn);
 * - POST …/chat/completions: a Chat Completions response (the same text, stop).
 *
 * A request with `"stream": true` gets the same answer as server-sent events
 * (the Messages API's message_start … message_stop; Chat Completions' chunks
 * and `data: [DONE]`), for the streaming rows to come (see brain-call.mjs).
 * Anything else is a 404 or a 400, so a wrong request fails the bench.
 *
 *   fork("bench/lib/model-server.mjs"): sends { port } once listening; ends on
 *   SIGTERM or when its parent goes.
 */
import * as http from "node:http"

const REPLY = "Noted."
const MODEL = "bench-model"

const messagesAnswer = JSON.stringify({
  id: "msg_bench",
  type: "message",
  role: "assistant",
  model: MODEL,
  content: [{ type: "text", text: REPLY }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 1200, output_tokens: 3 }
})

const chatAnswer = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: MODEL,
  choices: [{ index: 0, message: { role: "assistant", content: REPLY }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1200, completion_tokens: 3, total_tokens: 1203 }
})

const sse = (events) => events.map(([event, data]) => `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`).join("")

const messagesStream = sse([
  ["message_start", { type: "message_start", message: { id: "msg_bench", type: "message", role: "assistant", model: MODEL, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1200, output_tokens: 1 } } }],
  ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: REPLY } }],
  ["content_block_stop", { type: "content_block_stop", index: 0 }],
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } }],
  ["message_stop", { type: "message_stop" }]
])

const chunk = (delta, finish) => ({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] })
const chatStream = sse([
  [undefined, chunk({ role: "assistant", content: "" }, null)],
  [undefined, chunk({ content: REPLY }, null)],
  [undefined, chunk({}, "stop")],
  [undefined, "[DONE]"]
])

const answer = (response, status, type, body) => {
  response.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) })
  response.end(body)
}

const server = http.createServer({ keepAlive: true }, (request, response) => {
  const chunks = []
  request.on("data", (piece) => chunks.push(piece))
  request.on("end", () => {
    const messages = request.url.endsWith("/v1/messages")
    const chat = request.url.endsWith("/chat/completions")
    if (request.method !== "POST" || !(messages || chat)) return answer(response, 404, "application/json", `{"error":{"type":"not_found_error","message":"no route ${request.method} ${request.url}"}}`)
    let body
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      return answer(response, 400, "application/json", `{"error":{"type":"invalid_request_error","message":"body is not JSON"}}`)
    }
    if (typeof body.model !== "string" || !Array.isArray(body.messages) || (messages && request.headers["anthropic-version"] === undefined)) {
      return answer(response, 400, "application/json", `{"error":{"type":"invalid_request_error","message":"not a ${messages ? "Messages" : "Chat Completions"} request"}}`)
    }
    if (body.stream === true) return answer(response, 200, "text/event-stream", messages ? messagesStream : chatStream)
    answer(response, 200, "application/json", messages ? messagesAnswer : chatAnswer)
  })
})
server.keepAliveTimeout = 60_000

server.listen(0, "127.0.0.1", () => process.send?.({ port: server.address().port }))
process.on("SIGTERM", () => process.exit(0))
process.on("disconnect", () => process.exit(0))
