/**
 * Many agents in one process (issue 12): the agent host from dist/ over a
 * real agents directory, with an in-process brain that answers at once and
 * no tools.
 *
 * 1. Warm-up: 300 agents, one message each, then released (the JIT has seen
 *    agent start, a turn and release); the idle process is measured then,
 *    with the host and the HTTP server up and no agent running.
 * 2. 10,000 agents, each sent one message at the same moment through
 *    AgentHost.send: serve_turns_per_s, serve_p50_ms and serve_p99_ms (each
 *    from the burst's start to its reply), serve_rss_mb_10k_active (resident
 *    memory with the 10,000 started, after a full GC),
 *    serve_rss_mb_60s_after_release (60 s after PLANCKCLAW_AGENT_IDLE passed
 *    and they were released, no collection forced: the host gives their
 *    memory back itself, IdleCollection, as `serve` runs it),
 *    serve_rss_mb_10k_released (then after a full GC), each against the
 *    idle process, and serve_heap_total_mb_* beside them (what V8's heap
 *    spaces hold, used or not: a resident figure far above it is memory
 *    outside them, the allocator's or pages V8 has not given back);
 *    serve_kib_per_agent (the active figure above idle, per agent);
 *    serve_burst_p50_over_duration (the median reply's latency over the
 *    burst's length: about 0.5 when replies come evenly through the
 *    burst, 1 when they all come at its end) and serve_burst_first_reply_ms.
 * 3. The same burst over the HTTP API on loopback: a load generator in a
 *    second process (bench/lib/http-load.mjs) sends one request per agent
 *    over BENCH_HTTP_SOCKETS keep-alive connections: http_requests_per_s,
 *    http_p50_ms, http_p99_ms (each request from its write to its reply).
 * 4. A conversation: 100 of those agents, started, sent a message each at
 *    once, round after round (one untimed round, then
 *    BENCH_CONVERSATION_ROUNDS): serve_conversation_turns_per_s and
 *    serve_conversation_cpu_us_per_turn, a started agent's next message
 *    (they are among the agents keeping their files open,
 *    PLANCKCLAW_AGENTS_HOLDING_FILES).
 * 5. The same conversation over HTTP, from the load generator:
 *    http_conversation_requests_per_s and
 *    http_conversation_cpu_us_per_request (the server's), what the HTTP API
 *    adds to a started agent's message.
 * 6. The HTTP layer's own cost: the build's HTTP API over a host answering
 *    at once (bench/lib/http-layer-server.mjs), beside Effect 4's router
 *    alone (bench/lib/bare-router.mjs), each in a process of its own under
 *    the same load: main-thread CPU per request, http_layer_cpu_us_per_request
 *    and effect_router_cpu_us_per_request, and http_layer_x_effect_router.
 *    Each server first answers BENCH_LAYER_REQUESTS (20,000) requests, then
 *    as many are measured in six rounds, alternated between the two
 *    (bench/lib/http-layer-cost.mjs says why): a server that runs for days
 *    runs optimised code, and in the first few thousand requests the JIT is
 *    still compiling (the HTTP layer has more code to compile than the
 *    router alone: measured after 2,000 requests, both cost about twice as
 *    much, the layer ×2.2–2.5 the router).
 *
 * Run: npm run build && node --expose-gc bench/serve.mjs
 * (PLANCKCLAW_BENCH_REPO=DIR: another checkout's build, see bench/compare.mjs)
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { effect, fromDist, httpServerModule, settingsLayer, settingsProvider, warningsAndUp, withSettings } from "./lib/build.mjs"
import { main, progress } from "./lib/child.mjs"
import { httpBurst as httpLoad } from "./lib/http-burst.mjs"
import { layerAndRouterCpu } from "./lib/http-layer-cost.mjs"
import { percentile, round } from "./lib/stats.mjs"
import { benchDir, makeWorkDir } from "./lib/work.mjs"

// The build's own (lib/build.mjs): PLANCKCLAW_BENCH_REPO picks another checkout's.
const { Context, Effect, Layer } = effect
const HttpServer = await httpServerModule()
const { Brain } = await fromDist("ports/Brain.js")
const InMemoryClaws = await fromDist("claws/InMemoryClaws.js")
const AgentHost = await fromDist("hosts/serve/AgentHost.js")
const HttpApi = await fromDist("hosts/serve/HttpApi.js")
const EarlyTierUp = await fromDist("runtime/process/EarlyTierUp.js")
const Pretenuring = await fromDist("runtime/process/Pretenuring.js")
// Absent from builds before it (bench/compare.mjs): they leave V8's young generation its own size.
const YoungGeneration = await fromDist("runtime/process/YoungGeneration.js").catch(() => undefined)
// As `planckclaw serve` runs it beside its host; absent from builds before it (bench/compare.mjs).
const IdleCollection = await fromDist("runtime/process/IdleCollection.js").catch(() => undefined)

const AGENTS = Number(process.env.BENCH_AGENTS ?? 10_000)
const WARM_UP = Number(process.env.BENCH_WARM_UP_AGENTS ?? 300)
// Longer than the burst takes, so every agent is still running when the active figure is taken.
const IDLE_SECONDS = Number(process.env.BENCH_AGENT_IDLE ?? 30)
// Resident memory is read this long after the release, with no collection forced (issue 52 item 4).
const AFTER_RELEASE_SECONDS = 60
const SOCKETS = Number(process.env.BENCH_HTTP_SOCKETS ?? 64)
const CONVERSATION_AGENTS = 100
const CONVERSATION_ROUNDS = Number(process.env.BENCH_CONVERSATION_ROUNDS ?? 20)
const LAYER_REQUESTS = Number(process.env.BENCH_LAYER_REQUESTS ?? 20_000)
const LAYER_ROUNDS = 6

const instantBrain = Layer.succeed(Brain, {
  complete: () => Effect.succeed({ content: [{ type: "text", text: "Noted." }], stop_reason: "end_turn" })
})

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Resident memory, V8's heap in use and its total (what its spaces hold,
 * used or not) after a full GC, MiB. V8 hands the pages a GC freed back to
 * the system from a background thread, tens of milliseconds later: read
 * at once, the resident figure still held them (179 MiB after the 10,000
 * were released, 116 a twentieth of a second later), so it is read once
 * two readings 200 ms apart agree within 1 MiB (at most 5 s).
 */
const memory = async () => {
  globalThis.gc?.()
  globalThis.gc?.()
  const { heapUsed: heap, heapTotal } = process.memoryUsage()
  let rss = process.memoryUsage.rss()
  for (let waited = 0; waited < 5000; waited += 200) {
    await sleep(200)
    const next = process.memoryUsage.rss()
    const settled = Math.abs(next - rss) < 1024 * 1024
    rss = next
    if (settled) break
  }
  return { rss: round(rss / 1024 / 1024, 1), heap: round(heap / 1024 / 1024, 1), heapTotal: round(heapTotal / 1024 / 1024, 1) }
}

/** Sends one message to each agent at once; latencies from the start, in ms; main-thread CPU per message, µs. */
const burst = async (ids, send) => {
  const latencies = new Float64Array(ids.length)
  const cpu = process.cpuUsage()
  const started = performance.now()
  await Promise.all(ids.map((id, index) => send(id).then(() => { latencies[index] = performance.now() - started })))
  const used = process.cpuUsage(cpu)
  return { wallMs: performance.now() - started, latencies, cpuUs: (used.user + used.system) / ids.length }
}

/** The same burst from a second process over keep-alive connections. */
const httpBurst = (port, ids) => httpLoad(port, ids, { sockets: SOCKETS })

const kbPerAgent = (above, agents) => round((above * 1024) / agents, 1)

main(async () => {
  const work = makeWorkDir("serve")
  try {
    const settings = settingsProvider([
      ["PLANCKCLAW_AGENTS_DIR", path.join(work.dir, "agents")],
      ["PLANCKCLAW_DIR", path.join(work.dir, "memory")],
      ["PLANCKCLAW_AGENT_IDLE", String(IDLE_SECONDS)],
      // As `planckclaw serve` does (src/runtime/process/Pretenuring.ts, EarlyTierUp.ts, YoungGeneration.ts);
      // PLANCKCLAW_V8_PRETENURING=1, PLANCKCLAW_V8_EARLY_TIER_UP=1 (opt-in) and
      // PLANCKCLAW_V8_YOUNG_GENERATION_CAP=0 measure the other choices.
      ["PLANCKCLAW_V8_PRETENURING", process.env.PLANCKCLAW_V8_PRETENURING ?? "0"],
      ["PLANCKCLAW_V8_EARLY_TIER_UP", process.env.PLANCKCLAW_V8_EARLY_TIER_UP ?? "0"],
      ["PLANCKCLAW_V8_YOUNG_GENERATION_CAP", process.env.PLANCKCLAW_V8_YOUNG_GENERATION_CAP ?? "1"]
    ])
    const layer = HttpApi.layer({ host: "127.0.0.1", port: 0 }).pipe(
      Layer.provideMerge(AgentHost.layer),
      Layer.provide(Layer.merge(instantBrain, InMemoryClaws.layer([]))),
      Layer.provide(Layer.merge(settingsLayer(settings), warningsAndUp))
    )
    const ids = Array.from({ length: AGENTS }, (_, n) => `agent-${n}`)
    return await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(layer)
      yield* withSettings(Effect.flatten(Pretenuring.readChoice()), settings)
      const tierUpEarly = yield* withSettings(EarlyTierUp.readChoice(), settings)
      const capYoungGeneration = YoungGeneration === undefined ? (effect) => effect : yield* withSettings(YoungGeneration.readChoice(), settings)
      const host = Context.get(context, AgentHost.AgentHost)
      const port = Context.get(context, HttpServer.HttpServer).address.port
      const send = (id) => Effect.runPromise(host.send(id, { text: "Remember this." }))
      // Every page of the listing, as a client would read it.
      const runningNow = async () => {
        let running = 0
        for (let after; ;) {
          const page = await Effect.runPromise(host.list({ after, limit: 1000 }))
          running += page.agents.filter((agent) => agent.state === "running").length
          if (page.next === null) return running
          after = page.next
        }
      }

      if (IdleCollection !== undefined && host.activity !== undefined) {
        const quietSeconds = yield* withSettings(Effect.gen(function*() { return yield* IdleCollection.QuietSecondsConfig }), settings)
        yield* Effect.forkScoped(IdleCollection.run(host.activity, quietSeconds))
      }

      return yield* capYoungGeneration(tierUpEarly(Effect.gen(function*() {
        progress(`serve: warm-up with ${WARM_UP} agents, then ${IDLE_SECONDS + 2} s for their release`)
        yield* Effect.promise(() => burst(Array.from({ length: WARM_UP }, (_, n) => `warm-up-${n}`), send))
        yield* Effect.promise(() => sleep((IDLE_SECONDS + 2) * 1000))
        const idle = yield* Effect.promise(memory)

        progress(`serve: ${AGENTS} agents, one message each, at once (idle process ${idle.rss} MB)`)
        const inProcess = yield* Effect.promise(() => burst(ids, send))
        const active = yield* Effect.promise(memory)
        const running = yield* Effect.promise(runningNow)
        progress(`serve: ${round(inProcess.wallMs, 0)} ms, ${running} running, ${active.rss} MB; ${IDLE_SECONDS} s for their release, then ${AFTER_RELEASE_SECONDS} s`)
        yield* Effect.promise(() => sleep((IDLE_SECONDS + AFTER_RELEASE_SECONDS) * 1000))
        const afterRelease = round(process.memoryUsage.rss() / 1024 / 1024, 1)
        // What V8's heap spaces hold then, used or not: the rest of the resident figure is outside them.
        const heapTotalAfterRelease = round(process.memoryUsage().heapTotal / 1024 / 1024, 1)
        const released = yield* Effect.promise(memory)
        const stillRunning = yield* Effect.promise(runningNow)

        progress(`http: ${AGENTS} requests over ${SOCKETS} keep-alive connections from a second process`)
        const serverCpu = process.cpuUsage()
        const overHttp = yield* Effect.promise(() => httpBurst(port, ids))
        const httpCpu = process.cpuUsage(serverCpu)
        const lines = fs.readFileSync(path.join(work.dir, "agents", ids[AGENTS - 1], "history.jsonl"), "utf8").split("\n").length - 1
        if (lines !== 4) throw new Error(`agent ${ids[AGENTS - 1]} has ${lines} history lines after two exchanges, not 4`)

        const talking = ids.slice(0, CONVERSATION_AGENTS)
        progress(`serve: a conversation, ${CONVERSATION_AGENTS} started agents, ${CONVERSATION_ROUNDS} rounds`)
        yield* Effect.promise(() => burst(talking, send))
        const conversationCpu = process.cpuUsage()
        const conversationStarted = performance.now()
        for (let round = 0; round < CONVERSATION_ROUNDS; round++) yield* Effect.promise(() => burst(talking, send))
        const conversationMs = performance.now() - conversationStarted
        const conversationUsed = process.cpuUsage(conversationCpu)
        const turns = CONVERSATION_AGENTS * CONVERSATION_ROUNDS

        progress(`http: the same conversation, ${turns} requests over ${SOCKETS} keep-alive connections`)
        const httpConversationCpu = process.cpuUsage()
        const httpConversation = yield* Effect.promise(() => httpBurst(port, Array.from({ length: turns }, (_, n) => talking[n % CONVERSATION_AGENTS])))
        const httpConversationUsed = process.cpuUsage(httpConversationCpu)

        progress(`http: serve's HTTP layer over a host answering at once beside Effect 4's router alone, ${LAYER_REQUESTS} requests each after as many, in ${LAYER_ROUNDS} alternated rounds`)
        // A build whose HTTP API this server cannot host (an older one, bench/compare.mjs) has no layer row.
        const { layer: httpLayerUs, router } = yield* Effect.promise(() =>
          layerAndRouterCpu(talking, { requests: LAYER_REQUESTS, rounds: LAYER_ROUNDS, sockets: SOCKETS }))

        const notes = []
        if (running < AGENTS) {
          notes.push(`serve: only ${running} of ${AGENTS} agents were still running when the active figure was taken (the burst outlasted BENCH_AGENT_IDLE=${IDLE_SECONDS}): serve_rss_mb_10k_active is low`)
        }
        if (stillRunning > 0) notes.push(`serve: ${stillRunning} agents were still running at the released figure`)
        return {
          metrics: {
            serve_agents: AGENTS,
            serve_turns_per_s: Math.round((AGENTS / inProcess.wallMs) * 1000),
            serve_p50_ms: round(percentile(inProcess.latencies, 50), 1),
            serve_p99_ms: round(percentile(inProcess.latencies, 99), 1),
            serve_cpu_us_per_turn: Math.round(inProcess.cpuUs),
            serve_rss_mb_idle: idle.rss,
            serve_rss_mb_10k_active: active.rss,
            serve_rss_mb_10k_released: released.rss,
            serve_kb_per_active_agent: kbPerAgent(active.rss - idle.rss, AGENTS),
            serve_kib_per_agent: kbPerAgent(active.rss - idle.rss, AGENTS),
            serve_rss_mb_60s_after_release: afterRelease,
            serve_burst_p50_over_duration: round(percentile(inProcess.latencies, 50) / inProcess.wallMs, 2),
            serve_burst_first_reply_ms: round(Math.min(...inProcess.latencies), 0),
            serve_mb_released_above_idle: round(released.rss - idle.rss, 1),
            serve_heap_mb_idle: idle.heap,
            serve_heap_mb_10k_active: active.heap,
            serve_heap_mb_10k_released: released.heap,
            serve_heap_total_mb_idle: idle.heapTotal,
            serve_heap_total_mb_60s_after_release: heapTotalAfterRelease,
            serve_heap_total_mb_10k_released: released.heapTotal,
            serve_running_after_burst: running,
            serve_running_after_idle: stillRunning,
            http_requests_per_s: Math.round((AGENTS / overHttp.wallMs) * 1000),
            http_p50_ms: round(percentile(overHttp.latencies, 50), 2),
            http_p99_ms: round(percentile(overHttp.latencies, 99), 2),
            http_cpu_us_per_request: Math.round((httpCpu.user + httpCpu.system) / AGENTS),
            http_sockets: SOCKETS,
            serve_conversation_turns_per_s: Math.round((turns / conversationMs) * 1000),
            serve_conversation_cpu_us_per_turn: Math.round((conversationUsed.user + conversationUsed.system) / turns),
            http_conversation_requests_per_s: Math.round((turns / httpConversation.wallMs) * 1000),
            http_conversation_cpu_us_per_request: Math.round((httpConversationUsed.user + httpConversationUsed.system) / turns),
            ...(httpLayerUs === undefined ? {} : {
              http_layer_cpu_us_per_request: Math.round(httpLayerUs),
              http_layer_x_effect_router: round(httpLayerUs / router, 2)
            }),
            effect_router_cpu_us_per_request: Math.round(router)
          },
          notes
        }
      })))
    })))
  } finally {
    work.remove()
  }
})
