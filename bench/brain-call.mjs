/**
 * One brain call to a model server on loopback: the main-thread CPU the
 * agent's own brain clients spend on it, beside a bare `fetch` and a bare
 * `node:http` request in the same run.
 *
 * The model server (lib/model-server.mjs) is a process of its own, so only
 * the client's side is counted. This process builds the build's real brain
 * layers from its dist/ (PLANCKCLAW_BENCH_REPO picks another checkout's, see
 * lib/build.mjs and compare.mjs), with its own settings pointed at the
 * server, and calls `Brain.complete` with a turn-sized Messages request
 * (soul.md as the system prompt, 40 history messages and the new one, one
 * tool), checking every answer:
 *
 * - anthropic_shipped: AnthropicBrain.layer over the HTTP client the agent
 *   ships its brains with (src/pipes/Bridges.ts: src/brain/BrainHttpClient.ts,
 *   undici loaded at the first call; fetch in builds before it);
 * - anthropic_fetch: the same layer over Effect's fetch client;
 * - anthropic_undici: over @effect/platform-node's undici client;
 * - anthropic_node_http: over its node:http client (keep-alive agent);
 * - openai_shipped, openai_fetch: OpenAiBrain.layer, Chat Completions (the
 *   request translated and the answer translated back, as the agent does);
 * - bare_fetch: `fetch` POSTs the same JSON to /v1/messages, reads the
 *   text and parses it (Node's own undici, keep-alive);
 * - bare_http: `http.request` on a keep-alive http.Agent, the same;
 * - run_promise: Effect.runPromise of a ready answer, the harness's own share of
 *   each brain row (a brain call starts a fiber here; in the agent it runs
 *   in the turn's fiber).
 *
 * Each variant is called 300 times untimed, then BENCH_BRAIN_CALLS times in
 * BENCH_BRAIN_ROUNDS interleaved batches (every other round in reverse
 * order, lib/cpu.mjs interleavedRuns): main-thread CPU per call (the
 * kernel's schedstat of this thread over each batch), the p50 of each call's
 * wall time, and each brain's CPU as a ratio to the bare fetch of the same run.
 *
 * Streaming (a build whose brains stream, as the agent's turns ask them to):
 * the model server answers `"stream": true` with server-sent events, read to
 * their end by the brains' `stream` over each client (the same names with
 * `_stream`) and by a bare fetch (bare_fetch_stream).
 * BENCH_BRAIN_STREAMING=0 leaves them out.
 *
 * The figures of issue 52: brain_http_cpu_us_per_call, the most any shipped
 * row costs (anthropic and openai, whole and streamed; target ≤ 500 µs), and
 * fetch_cpu_us_per_call, the bare fetch of the same run.
 *
 *   node --expose-gc bench/brain-call.mjs
 */
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describeBuild, effect, fromDist, httpClientLayers, settingsLayer, settingsProvider } from "./lib/build.mjs"
import { main, progress } from "./lib/child.mjs"
import { interleavedRuns } from "./lib/cpu.mjs"
import { median, round } from "./lib/stats.mjs"
import { benchDir, repoDir } from "./lib/work.mjs"

const CALLS = Number(process.env.BENCH_BRAIN_CALLS ?? 3000)
const ROUNDS = Number(process.env.BENCH_BRAIN_ROUNDS ?? 20)
const STREAMING = process.env.BENCH_BRAIN_STREAMING !== "0"
const REPLY = "Noted."
const API_KEY = "bench-key-not-secret"
const ANTHROPIC_VERSION = "2023-06-01"

const { Context, Effect, Exit, Layer, Scope, Stream } = effect

/** A turn-sized request, as the agent sends one after some conversation. */
const request = (() => {
  const soul = fs.readFileSync(path.join(repoDir, "memory", "soul.md"), "utf8")
  const messages = []
  for (let i = 0; i < 20; i++) {
    messages.push({ role: "user", content: `Question ${i}: what should I remember about the benchmark run?` })
    messages.push({ role: "assistant", content: `Answer ${i}: that the agent must add microseconds, not milliseconds.` })
  }
  messages.push({ role: "user", content: "What should I remember about this run?" })
  return {
    model: "bench-model",
    max_tokens: 1024,
    tools: [{ name: "get_time", description: "Get the current time", input_schema: { type: "object", properties: {} } }],
    system: soul,
    messages
  }
})()

const startModelServer = () =>
  new Promise((resolve, reject) => {
    const child = fork(path.join(benchDir, "lib", "model-server.mjs"), [], { stdio: ["ignore", "inherit", "inherit", "ipc"] })
    child.once("message", ({ port }) => resolve({ port, stop: () => child.kill("SIGTERM") }))
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`the model server exited (${code}) before listening`)))
  })

const checkText = (text) => {
  if (text !== REPLY) throw new Error(`unexpected answer ${JSON.stringify(text)}`)
}

/** A brain layer built once (its scope closed at the end); each call runs `complete` to its answer. */
const brainVariant = async (key, brainLayer, clientLayer, settings, scope) => {
  const { Brain } = await fromDist("ports/Brain.js")
  const layer = brainLayer.pipe(Layer.provide(clientLayer), Layer.provide(settingsLayer(settingsProvider(settings))))
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const brain = Context.get(context, Brain)
  return [key, async () => {
    const answer = await Effect.runPromise(brain.complete(request))
    checkText(answer.content[0]?.text)
  }]
}

/** The same layer, each call reading `stream` to its end (the text gathered from its deltas); none if the build's brains don't stream. */
const streamVariant = async (key, brainLayer, clientLayer, settings, scope) => {
  const { Brain } = await fromDist("ports/Brain.js")
  const layer = brainLayer.pipe(Layer.provide(clientLayer), Layer.provide(settingsLayer(settingsProvider(settings))))
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const brain = Context.get(context, Brain)
  if (brain.stream === undefined) return []
  return [[key, async () => {
    const events = await Effect.runPromise(Stream.runCollect(brain.stream(request)))
    const answer = [...events].find((event) => event._tag === "Answer")
    checkText(answer?.response.content[0]?.text)
  }]]
}

/** POST with a bare fetch: the text, parsed. */
const bareFetch = (url, headers, body) => async () => {
  const response = await fetch(url, { method: "POST", headers, body })
  const json = JSON.parse(await response.text())
  checkText(json.content[0]?.text)
}

/** The same with node:http on a keep-alive agent. */
const bareHttp = (port, headers, body) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const options = { host: "127.0.0.1", port, method: "POST", path: "/v1/messages", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) } }
  return () =>
    new Promise((resolve, reject) => {
      const call = http.request(options, (response) => {
        const chunks = []
        response.on("data", (chunk) => chunks.push(chunk))
        response.on("end", () => {
          try {
            checkText(JSON.parse(Buffer.concat(chunks).toString("utf8")).content[0]?.text)
            resolve()
          } catch (error) {
            reject(error)
          }
        })
      })
      call.on("error", reject)
      call.end(body)
    })
}

/** A bare fetch reading the Messages API's event stream to its end, the text gathered from its deltas. */
const bareFetchStream = (url, headers, request) => {
  const body = JSON.stringify({ ...request, stream: true })
  return async () => {
    const response = await fetch(url, { method: "POST", headers, body })
    let text = ""
    for (const event of (await response.text()).split("\n\n")) {
      const data = event.split("\n").find((line) => line.startsWith("data: "))
      if (data === undefined) continue
      const json = JSON.parse(data.slice(6))
      if (json.type === "content_block_delta") text += json.delta.text
    }
    checkText(text)
  }
}

/** Streaming rows: the brains' own streams (a build whose brains stream) beside a bare fetch of the same stream. */
const streamingVariants = async ({ messagesUrl, headers, brains, clients, anthropicSettings, openAiSettings, scope }) =>
  STREAMING
    ? [
      ["bare_fetch_stream", bareFetchStream(messagesUrl, headers, request)],
      ...(await streamVariant("anthropic_shipped_stream", brains.anthropic, clients.shipped, anthropicSettings, scope)),
      ...(await streamVariant("anthropic_fetch_stream", brains.anthropic, clients.fetch, anthropicSettings, scope)),
      ...(await streamVariant("anthropic_undici_stream", brains.anthropic, clients.undici, anthropicSettings, scope)),
      ...(await streamVariant("anthropic_node_http_stream", brains.anthropic, clients.nodeHttp, anthropicSettings, scope)),
      ...(await streamVariant("openai_shipped_stream", brains.openai, clients.shipped, openAiSettings, scope)),
      ...(await streamVariant("openai_fetch_stream", brains.openai, clients.fetch, openAiSettings, scope))
    ]
    : []

main(async () => {
  const server = await startModelServer()
  const scope = await Effect.runPromise(Scope.make())
  try {
    const base = `http://127.0.0.1:${server.port}`
    const messagesUrl = `${base}/v1/messages`
    const headers = { "content-type": "application/json", "x-api-key": API_KEY, "anthropic-version": ANTHROPIC_VERSION }
    const body = JSON.stringify(request)
    const AnthropicBrain = await fromDist("brain/AnthropicBrain.js")
    const OpenAiBrain = await fromDist("brain/OpenAiBrain.js")
    const clients = await httpClientLayers()
    const anthropicSettings = [["ANTHROPIC_API_KEY", API_KEY], ["ANTHROPIC_BASE_URL", base], ["PLANCKCLAW_MODEL", "bench-model"]]
    const openAiSettings = [["OPENAI_BASE_URL", `${base}/v1`], ["PLANCKCLAW_MODEL", "bench-model"]]
    const ready = Effect.succeed({ content: [{ type: "text", text: REPLY }], stop_reason: "end_turn" })
    const variants = [
      ["bare_fetch", bareFetch(messagesUrl, headers, body)],
      ["bare_http", bareHttp(server.port, headers, body)],
      await brainVariant("anthropic_shipped", AnthropicBrain.layer, clients.shipped, anthropicSettings, scope),
      await brainVariant("anthropic_fetch", AnthropicBrain.layer, clients.fetch, anthropicSettings, scope),
      await brainVariant("anthropic_undici", AnthropicBrain.layer, clients.undici, anthropicSettings, scope),
      await brainVariant("anthropic_node_http", AnthropicBrain.layer, clients.nodeHttp, anthropicSettings, scope),
      await brainVariant("openai_shipped", OpenAiBrain.layer, clients.shipped, openAiSettings, scope),
      await brainVariant("openai_fetch", OpenAiBrain.layer, clients.fetch, openAiSettings, scope),
      ["run_promise", async () => checkText((await Effect.runPromise(ready)).content[0].text)],
      ...(await streamingVariants({
        messagesUrl,
        headers,
        brains: { anthropic: AnthropicBrain.layer, openai: OpenAiBrain.layer },
        clients,
        anthropicSettings,
        openAiSettings,
        scope
      }))
    ]
    progress(`brain call: ${describeBuild()}, ${variants.length} variants, ${CALLS} calls each in ${ROUNDS} rounds`)
    globalThis.gc?.()
    const { times, cpu } = await interleavedRuns(variants, { n: CALLS, rounds: ROUNDS, alternate: true })
    const metrics = {}
    const detail = {}
    variants.forEach(([key], k) => {
      const cpuUs = round(cpu[k] / times[k].length, 1)
      const p50Ms = round(median(times[k]) / 1000, 4)
      metrics[`brain_call_cpu_us_${key}`] = cpuUs
      metrics[`brain_call_p50_ms_${key}`] = p50Ms
      detail[key] = { calls: times[k].length, cpuUs, p50Ms }
    })
    for (const [key] of variants) {
      if (key === "bare_fetch" || key === "run_promise") continue
      metrics[`brain_call_${key}_x_bare_fetch`] = round(metrics[`brain_call_cpu_us_${key}`] / metrics.brain_call_cpu_us_bare_fetch, 2)
    }
    // Issue 52's keys: the dearest shipped row, and the bare fetch beside it.
    const shipped = variants.map(([key]) => key).filter((key) => key.includes("_shipped"))
    metrics.brain_http_cpu_us_per_call = Math.max(...shipped.map((key) => metrics[`brain_call_cpu_us_${key}`]))
    metrics.fetch_cpu_us_per_call = metrics.brain_call_cpu_us_bare_fetch
    for (const [key] of variants) {
      progress(`${key}: main-thread CPU ${metrics[`brain_call_cpu_us_${key}`]} µs/call, p50 ${metrics[`brain_call_p50_ms_${key}`]} ms`)
    }
    return { metrics, detail: { build: describeBuild(), request_bytes: body.length, ...detail } }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    server.stop()
  }
})
