/**
 * `serve --cluster` cancels a turn as `serve` does (POST
 * /v1/agents/{id}/cancel with the message's Idempotency-Key): a turn held in
 * its brain call is stopped, its sender is answered that it was cancelled,
 * nothing is stored, and the key sent again gets a fresh turn; a message
 * waiting behind it never runs. In the cluster the message goes through
 * one runner and the cancel through the other, to the agent's runner. The
 * same exchanges against both hosts (BothHosts) get the same JSON, and the
 * same events to a sender reading the turn as server-sent events.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { usePostgres } from "../../support/Postgres.js"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import { within } from "../../support/Sandbox.js"
import { call, onBoth, useBothHosts } from "./BothHosts.js"

const postgres = usePostgres({ database: "cluster_cancel" })
const both = useBothHosts(postgres)

const CANCELLED = "Cancelled: the turn was stopped before it finished; nothing was stored."

/** A message sent with `Accept: text/event-stream`: its status and its events, read once the stream has ended. */
const streamed = async (base: string, id: string, options: { readonly key: string; readonly text: string }) => {
  const response = await fetch(`${base}/v1/agents/${id}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", "idempotency-key": options.key },
    body: JSON.stringify({ text: options.text })
  })
  const events = (await response.text()).split("\n\n").filter((block) => block.startsWith("event:")).map((block) => {
    const [event, data] = block.split("\n").map((line) => line.slice(line.indexOf(":") + 1).trim())
    return { event, data: JSON.parse(data!) }
  })
  return { status: response.status, events }
}

describe("serve --cluster's cancel over HTTP, as serve's", () => {
  it("stops a turn held in its brain call: its sender told, nothing stored, the key sent again gets a turn", async () => {
    const id = both.onRunnerA[0]!
    const [serve, cluster] = await onBoth(both.hosts, async (host) => {
      const [a, b] = host.bases
      const asked = (await Effect.runPromise(host.brain.requests)).length
      // Through the first address; the agent's turn waits for a brain that does not answer.
      const held = call(a, "POST", `/v1/agents/${id}/messages`, { key: "k-hold", text: "hold" })
      await Effect.runPromise(host.brain.awaitRequests(asked + 1).pipe(within("the held brain call")))
      // Cancelled through the other address (the cluster: a runner that does not hold the agent).
      const cancelled = await call(b, "POST", `/v1/agents/${id}/cancel`, { key: "k-hold" })
      const answered = await held
      const afterCancel = await call(b, "GET", `/v1/agents/${id}/history`)
      const again = await call(b, "POST", `/v1/agents/${id}/messages`, { key: "k-hold", text: "hold" })
      const turns = (await Effect.runPromise(host.brain.requests)).length - asked
      // A third time: the reply kept under the key, no other turn.
      const third = await call(a, "POST", `/v1/agents/${id}/messages`, { key: "k-hold", text: "hold" })
      return {
        cancelled,
        answered,
        afterCancel: afterCancel.body,
        again,
        turns,
        third,
        turnsAfterThird: (await Effect.runPromise(host.brain.requests)).length - asked,
        history: (await call(a, "GET", `/v1/agents/${id}/history`)).body.entries.map(({ role, content }: any) => ({ role, content })),
        answeredAlready: await call(a, "POST", `/v1/agents/${id}/cancel`, { key: "k-hold" }),
        unknownKey: await call(b, "POST", `/v1/agents/${id}/cancel`, { key: "k-never-sent" }),
        unknownAgent: await call(a, "POST", "/v1/agents/nobody/cancel", { key: "k-hold" }),
        badId: await call(a, "POST", "/v1/agents/Not%20An%20Id/cancel", { key: "k-hold" }),
        noKey: (await call(b, "POST", `/v1/agents/${id}/cancel`)).status
      }
    })
    expect(cluster).toEqual(serve)
    expect(serve.cancelled).toEqual({ status: 200, body: { cancelled: true } })
    expect(serve.answered).toEqual({ status: 200, body: { reply: CANCELLED, stored: false } })
    expect(serve.afterCancel).toEqual({ entries: [], next: null })
    expect(serve.again).toEqual({ status: 200, body: { reply: "echo hold", stored: true } })
    // The held call, then the fresh turn's.
    expect(serve.turns).toBe(2)
    expect([serve.third, serve.turnsAfterThird]).toEqual([serve.again, 2])
    expect(serve.history).toEqual([{ role: "assistant", content: "echo hold" }, { role: "user", content: "hold" }])
    expect(serve.answeredAlready).toEqual({ status: 200, body: { cancelled: false } })
    expect(serve.unknownKey).toEqual({ status: 200, body: { cancelled: false } })
    expect([serve.unknownAgent.status, serve.unknownAgent.body.error]).toEqual([404, "not-found"])
    expect([serve.badId.status, serve.badId.body.error]).toEqual([400, "bad-id"])
    expect(serve.noKey).toBe(400)
  }, 120_000)

  it("cancels a message waiting behind a held turn: it never runs, and its key sent again gets a turn", async () => {
    const id = both.onRunnerA[1]!
    const [serve, cluster] = await onBoth(both.hosts, async (host) => {
      const [a, b] = host.bases
      const asked = (await Effect.runPromise(host.brain.requests)).length
      const held = call(a, "POST", `/v1/agents/${id}/messages`, { key: "k-first", text: "hold on" })
      await Effect.runPromise(host.brain.awaitRequests(asked + 1).pipe(within("the held brain call")))
      const waiting = streamed(b, id, { key: "k-waiting", text: "waiting" })
      // Cancellable once it has reached the agent (its runner, in the cluster): until then, false.
      const deadline = Date.now() + 20_000
      let cancelledWaiting = await call(b, "POST", `/v1/agents/${id}/cancel`, { key: "k-waiting" })
      while (cancelledWaiting.body.cancelled === false && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        cancelledWaiting = await call(b, "POST", `/v1/agents/${id}/cancel`, { key: "k-waiting" })
      }
      const cancelledHeld = await call(a, "POST", `/v1/agents/${id}/cancel`, { key: "k-first" })
      const answers = [await held, await waiting]
      const requests = await Effect.runPromise(host.brain.requests)
      return {
        cancelledWaiting,
        cancelledHeld,
        answers,
        asked: requests.slice(asked).map((request) => AnthropicServer.lastUserText(request.body)),
        history: (await call(b, "GET", `/v1/agents/${id}/history`)).body,
        again: await call(a, "POST", `/v1/agents/${id}/messages`, { key: "k-waiting", text: "waiting" })
      }
    })
    expect(cluster).toEqual(serve)
    expect([serve.cancelledWaiting, serve.cancelledHeld]).toEqual([{ status: 200, body: { cancelled: true } }, { status: 200, body: { cancelled: true } }])
    expect(serve.answers).toEqual([{ status: 200, body: { reply: CANCELLED, stored: false } }, {
      status: 200,
      events: [{ event: "accepted", data: { key: "k-waiting" } }, { event: "end", data: { reply: CANCELLED, stored: false, cancelled: true } }]
    }])
    // The waiting message never reached the brain.
    expect(serve.asked).toEqual(["hold on"])
    expect(serve.history).toEqual({ entries: [], next: null })
    expect(serve.again).toEqual({ status: 200, body: { reply: "echo waiting", stored: true } })
  }, 120_000)
})
