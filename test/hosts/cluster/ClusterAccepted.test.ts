/**
 * `serve --cluster`'s message stream acknowledges a message (`accepted`,
 * with the 200) once it is stored in PostgreSQL, before its turn has
 * answered, as `serve` does once it is journaled; and what it acknowledged
 * survives its runner. Two runners as built (`npm run build`) on a
 * throwaway PostgreSQL, an Anthropic stand-in on loopback that holds the
 * first call for a text starting with "hold" (BothHosts.brain): the
 * runner holding the agents is SIGKILLed while their turns are held, one
 * message sent through it and one through the other runner.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Exit, Redacted, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import { usePostgres } from "../../support/Postgres.js"
import { sandbox, within } from "../../support/Sandbox.js"
import { brain, call, HOST_SOUL } from "./BothHosts.js"
import { builtRunner, type Listening, placement, shardsSpread } from "./Runners.js"

const postgres = usePostgres({ database: "cluster_accepted" })

interface Cluster {
  readonly url: string
  readonly brain: AnthropicServer.AnthropicServer
  readonly runners: readonly [Listening, Listening]
  /** Agent ids the cluster places on the first runner. */
  readonly onFirst: ReadonlyArray<string>
}

let scope: Scope.Closeable | undefined
let cluster: Cluster | undefined

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(postgres)
  cluster = await Effect.runPromise(Scope.provide(Effect.gen(function*() {
    const stand = yield* AnthropicServer.make(brain())
    const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: stand.url }, "planckclaw-accepted-")
    box.writeMemory("soul.md", HOST_SOUL)
    const runner = builtRunner(box.envWith, server.url)
    const first = yield* runner
    const second = yield* runner
    yield* shardsSpread(server.url, 2)
    const candidates = Array.from({ length: 50 }, (_, n) => `kept-${n}`)
    const placed = placement([first.runnerPort, second.runnerPort], candidates)
    return {
      url: server.url,
      brain: stand,
      runners: [first, second] as const,
      onFirst: candidates.filter((_, n) => placed[n] === first.runnerPort)
    }
  }), scope))
}, 120_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)

interface SseEvent {
  readonly event: string
  readonly data: unknown
}

/**
 * A message sent with `Accept: text/event-stream` under `key`: its events as
 * they arrive, `arrived(n)` once there are n (bounded), and `ended` with the
 * response (a connection cut ends it too).
 */
const openStream = (port: number, id: string, key: string, text: string) => {
  const events: Array<SseEvent> = []
  const waiting: Array<() => void> = []
  const told = () => waiting.splice(0).forEach((wake) => wake())
  let done = false
  const ended = fetch(`http://127.0.0.1:${port}/v1/agents/${id}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", "idempotency-key": key },
    body: JSON.stringify({ text })
  }).then(async (response) => {
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let buffered = ""
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }))
      if (chunk.done) break
      buffered += decoder.decode(chunk.value, { stream: true })
      for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
        const block = buffered.slice(0, end).split("\n").filter((line) => !line.startsWith(":"))
        buffered = buffered.slice(end + 2)
        const field = (name: string) => block.find((line) => line.startsWith(`${name}:`))?.slice(name.length + 1).trim()
        const event = field("event")
        if (event !== undefined) events.push({ event, data: JSON.parse(field("data") ?? "null") })
      }
      told()
    }
    return response.status
  }, () => 0).finally(() => {
    done = true
    told()
  })
  const arrived = (count: number) =>
    Effect.runPromise(Effect.promise(async () => {
      while (events.length < count && !done) await new Promise<void>((resolve) => waiting.push(resolve))
      return events.slice(0, count)
    }).pipe(within(`${count} event(s) of the stream of ${key}`, "20 seconds")))
  return { events, arrived, ended }
}

/** The rows of the cluster's storage of agent `id`'s messages: key and whether answered. */
const storedMessages = (url: string, id: string) =>
  Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ message_id: string; processed: boolean }>`SELECT message_id, processed FROM cluster_messages
      WHERE entity_id = ${id} AND kind = 0 ORDER BY id`).pipe(
      Effect.map((rows) => rows.map((row) => ({ key: row.message_id.slice(`Agent/${id}/Send/`.length), answered: row.processed }))),
      Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
    ))

describe("serve --cluster's message stream", () => {
  it("says `accepted` once the message is stored, before its turn answers; what it acknowledged is answered after its runner is killed", async () => {
    const { brain: stand, onFirst, runners: [first, second], url } = cluster!
    const [throughFirst, throughSecond] = [onFirst[0]!, onFirst[1]!]
    const asked = (await Effect.runPromise(stand.requests)).length
    // Both agents live on the first runner; one message goes through it, one through the second.
    const cut = openStream(first.httpPort, throughFirst, "k-cut", "hold the line")
    const kept = openStream(second.httpPort, throughSecond, "k-kept", "hold on")
    expect(await cut.arrived(1)).toEqual([{ event: "accepted", data: { key: "k-cut" } }])
    expect(await kept.arrived(1)).toEqual([{ event: "accepted", data: { key: "k-kept" } }])
    // Both turns are in their brain calls, which the stand-in holds: nothing answered, both stored.
    await Effect.runPromise(stand.awaitRequests(asked + 2).pipe(within("the two held brain calls")))
    expect([cut.events.length, kept.events.length]).toEqual([1, 1])
    expect(await storedMessages(url, throughFirst)).toEqual([{ key: "idem:k-cut", answered: false }])
    expect(await storedMessages(url, throughSecond)).toEqual([{ key: "idem:k-kept", answered: false }])

    await first.kill("SIGKILL")
    // The stream through the killed runner is cut with nothing but its acknowledgement.
    expect(await cut.ended).toBe(200)
    expect(cut.events).toEqual([{ event: "accepted", data: { key: "k-cut" } }])
    // The second runner takes the agents over and answers both messages: its own stream ends with the reply...
    expect(await kept.arrived(2)).toEqual([
      { event: "accepted", data: { key: "k-kept" } },
      { event: "end", data: { reply: "echo hold on", stored: true, cancelled: false } }
    ])
    // ...and the cut one's retry under its key gets its reply, no third turn.
    const retried = openStream(second.httpPort, throughFirst, "k-cut", "hold the line")
    await retried.ended
    expect(retried.events).toEqual([
      { event: "accepted", data: { key: "k-cut" } },
      { event: "end", data: { reply: "echo hold the line", stored: true, cancelled: false } }
    ])
    const history = await call(`http://127.0.0.1:${second.httpPort}`, "GET", `/v1/agents/${throughFirst}/history`)
    expect(history.body.entries.map(({ role, content }: { role: string; content: string }) => ({ role, content }))).toEqual([
      { role: "assistant", content: "echo hold the line" },
      { role: "user", content: "hold the line" }
    ])
    // Each message: the held call, then the second runner's.
    const texts = (await Effect.runPromise(stand.requests)).slice(asked).map((request) => AnthropicServer.lastUserText(request.body))
    expect(texts.sort()).toEqual(["hold on", "hold on", "hold the line", "hold the line"])
  }, 120_000)
})
