/**
 * The HTTP load generator of bench/serve.mjs, in a process of its own so its
 * JSON and socket work does not run on the server's thread: one POST
 * /v1/agents/{id}/messages per id, over `sockets` keep-alive connections
 * (node's http.Agent), each connection sending its next request when its
 * reply arrives. Hands back the wall time and each request's latency (from
 * its write to the end of its reply) over IPC.
 *
 *   started by fork() with { port, ids, sockets, text } as its first message
 */
import * as http from "node:http"

const post = (agent, port, id, body) =>
  new Promise((resolve, reject) => {
    const request = http.request(
      { host: "127.0.0.1", port, method: "POST", path: `/v1/agents/${id}/messages`, agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (response) => {
        const chunks = []
        response.on("data", (chunk) => chunks.push(chunk))
        // A reply the agent did not store (its brain failed: `stored: false`) is not a measured turn.
        response.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          if (response.statusCode !== 200) reject(new Error(`HTTP ${response.statusCode} for ${id}: ${body}`))
          else if (body.includes('"stored":false')) reject(new Error(`the reply to ${id} was not stored (its brain failed?): ${body}`))
          else resolve()
        })
      }
    )
    request.on("error", reject)
    request.end(body)
  })

process.once("message", async ({ port, ids, sockets, text }) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets })
  const body = JSON.stringify({ text })
  const latencies = new Array(ids.length)
  let next = 0
  const connection = async () => {
    while (next < ids.length) {
      const index = next++
      const sent = performance.now()
      await post(agent, port, ids[index], body)
      latencies[index] = performance.now() - sent
    }
  }
  const started = performance.now()
  try {
    await Promise.all(Array.from({ length: sockets }, connection))
    const wallMs = performance.now() - started
    agent.destroy()
    process.send({ wallMs, latencies }, () => process.exit(0))
  } catch (error) {
    process.send({ error: String(error instanceof Error ? error.message : error) }, () => process.exit(1))
  }
})
