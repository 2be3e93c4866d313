/**
 * serve's HTTP layer beside Effect 4's router (issue 52 item 2), for
 * bench/serve.mjs: the build's API over a host answering at once
 * (http-layer-server.mjs) and the router alone (bare-router.mjs), each in a
 * process of its own, both started and warmed first (`requests` each: in
 * the first few thousand the JIT is still compiling, and a server that runs
 * for days runs optimised code), then measured in `rounds` bursts of
 * `requests / rounds`, alternated (layer, router, router, layer, …) so a
 * slower minute of the machine falls on both. Main-thread CPU per request
 * from /proc, summed over the rounds.
 *
 * On this 2-core machine one burst each moved the ratio between ×1.26 and
 * ×2.39 from one minute to the next (the router 37–69 µs a request): the
 * cost of each response's `writev` depends on whether the load generator,
 * on the other core, is asleep when it lands.
 */
import { forkServer, httpBurst, processCpuUs } from "./http-burst.mjs"

/** { layer, router }: µs of main-thread CPU per request; layer undefined if the build cannot host the API's server. */
export const layerAndRouterCpu = async (ids, { requests, rounds, sockets }) => {
  const layer = await forkServer("http-layer-server.mjs").catch(() => undefined)
  const router = await forkServer("bare-router.mjs", ["effect"])
  const servers = layer === undefined ? [router] : [layer, router]
  try {
    const load = (length) => Array.from({ length }, (_, n) => ids[n % ids.length])
    for (const server of servers) await httpBurst(server.port, load(requests), { sockets })
    const perRound = Math.ceil(requests / rounds)
    const used = new Map(servers.map((server) => [server, 0]))
    for (let round = 0; round < rounds; round++) {
      for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
        const before = processCpuUs(server.child.pid).main
        await httpBurst(server.port, load(perRound), { sockets })
        used.set(server, used.get(server) + processCpuUs(server.child.pid).main - before)
      }
    }
    const perRequest = (server) => used.get(server) / (perRound * rounds)
    return { layer: layer === undefined ? undefined : perRequest(layer), router: perRequest(router) }
  } finally {
    for (const server of servers) server.child.kill("SIGTERM")
  }
}
