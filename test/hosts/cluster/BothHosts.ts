/**
 * The two hosts of the HTTP API side by side, as built (`npm run build`):
 * `planckclaw serve` on its agents' files, and two runners of
 * `planckclaw serve --cluster` on a throwaway PostgreSQL, each host with
 * its own Anthropic stand-in on loopback (the same handler) and the same
 * host soul. A test runs the same exchanges against both and expects the
 * same answers: a client must not tell them apart.
 */
import * as fs from "node:fs"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Exit, Redacted, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as LoopbackHttp from "../../support/LoopbackHttp.js"
import type { PostgresServer } from "../../support/Postgres.js"
import { sandbox } from "../../support/Sandbox.js"
import { startServe } from "../../support/ServeKit.js"
import { builtRunner, placement, shardsSpread } from "./Runners.js"

export const HOST_SOUL = "You are the host's soul, for these tests."

/**
 * Turns answered `echo TEXT` with token counts that grow with the text (so
 * agents' sums differ), compactions with a summary listing the user's
 * messages; the first call for a text starting with "hold" is never
 * answered (a turn held in its brain call).
 */
export const brain = (): AnthropicServer.Handler => {
  const held = new Set<string>()
  return (request) => {
    if (AnthropicServer.isCompaction(request)) return AnthropicServer.listingSummary(request)
    const said = AnthropicServer.lastUserText(request.body)
    if (said.startsWith("hold") && !held.has(said)) {
      held.add(said)
      return LoopbackHttp.hang
    }
    return AnthropicServer.countingEcho(said)
  }
}

export interface Host {
  readonly name: "serve" | "serve --cluster"
  /** Where requests go: serve's one address twice; the cluster's two runners. */
  readonly bases: readonly [string, string]
  readonly brain: AnthropicServer.AnthropicServer
  /** Gives agent `id` a soul of its own: its soul.md, or its row's `soul` (as `memory import` leaves it). */
  readonly setSoul: (id: string, soul: string) => Promise<void>
}

export interface Answer {
  readonly status: number
  readonly body: any
}

/** A request with fetch: its status and parsed body. */
export const call = async (
  base: string,
  method: "GET" | "POST",
  target: string,
  options: { readonly key?: string; readonly text?: string } = {}
): Promise<Answer> => {
  const response = await fetch(`${base}${target}`, {
    method,
    headers: {
      ...(options.text === undefined ? {} : { "content-type": "application/json" }),
      ...(options.key === undefined ? {} : { "idempotency-key": options.key })
    },
    ...(options.text === undefined ? {} : { body: JSON.stringify({ text: options.text }) })
  })
  return { status: response.status, body: await response.json() }
}

/** The same exchanges against each host, in turn; their results, serve's first. */
export const onBoth = async <A>(hosts: ReadonlyArray<Host>, exchanges: (host: Host) => Promise<A>): Promise<[A, A]> => {
  const results: Array<A> = []
  for (const host of hosts) results.push(await exchanges(host))
  return [results[0]!, results[1]!]
}

/**
 * Both hosts for a test file, started in beforeAll and stopped in
 * afterAll; `onRunnerA` are agent ids the cluster places on its first
 * runner, so requests through the second are forwarded to it.
 */
export const useBothHosts = (postgres: Effect.Effect<PostgresServer>) => {
  let scope: Scope.Closeable | undefined
  const state: { hosts: ReadonlyArray<Host>; onRunnerA: ReadonlyArray<string> } = { hosts: [], onRunnerA: [] }
  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    const server = await Effect.runPromise(postgres)
    const hosts = await Effect.runPromise(Scope.provide(Effect.gen(function*() {
      const serveBrain = yield* AnthropicServer.make(brain())
      const fileBox = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: serveBrain.url, HISTORY_KEEP: "2" }, "planckclaw-both-")
      fileBox.writeMemory("soul.md", HOST_SOUL)
      const agents = fileBox.path("agents")
      const serve = yield* startServe(fileBox.dir, fileBox.envWith({ PLANCKCLAW_AGENTS_DIR: agents }))
      const fileHost: Host = {
        name: "serve",
        bases: [serve.base, serve.base],
        brain: serveBrain,
        setSoul: async (id, soul) => fs.writeFileSync(`${agents}/${id}/soul.md`, soul)
      }

      const clusterBrain = yield* AnthropicServer.make(brain())
      const clusterBox = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: clusterBrain.url, HISTORY_KEEP: "2" }, "planckclaw-both-")
      clusterBox.writeMemory("soul.md", HOST_SOUL)
      const runner = builtRunner(clusterBox.envWith, server.url)
      const a = yield* runner
      const b = yield* runner
      yield* shardsSpread(server.url, 2)
      const candidates = Array.from({ length: 50 }, (_, n) => `held-${n}`)
      const placed = placement([a.runnerPort, b.runnerPort], candidates)
      state.onRunnerA = candidates.filter((_, n) => placed[n] === a.runnerPort)
      const clusterHost: Host = {
        name: "serve --cluster",
        bases: [`http://127.0.0.1:${a.httpPort}`, `http://127.0.0.1:${b.httpPort}`],
        brain: clusterBrain,
        setSoul: (id, soul) =>
          Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE planckclaw_agents SET soul = ${soul} WHERE agent_id = ${id}`).pipe(
            Effect.provide(PgClient.layer({ url: Redacted.make(server.url), maxConnections: 1 }))
          )).then(() => undefined)
      }
      return [fileHost, clusterHost]
    }), scope))
    state.hosts = hosts
  }, 120_000)
  afterAll(async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)
  return state
}
