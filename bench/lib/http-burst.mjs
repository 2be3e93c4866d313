/**
 * Load over HTTP from a second process (bench/lib/http-load.mjs), so the
 * load's JSON and socket work does not run on the measured server's
 * thread; and the servers the serve benches measure against.
 */
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { benchDir } from "./work.mjs"

/** One POST /v1/agents/{id}/messages per id over `sockets` keep-alive connections: { wallMs, latencies }. */
export const httpBurst = (port, ids, { sockets = 64, text = "And this." } = {}) =>
  new Promise((resolve, reject) => {
    const child = fork(path.join(benchDir, "lib", "http-load.mjs"), [], { stdio: ["ignore", "inherit", "inherit", "ipc"] })
    child.once("message", (result) => (result.error === undefined ? resolve(result) : reject(new Error(result.error))))
    child.once("error", reject)
    child.once("exit", (code) => { if (code !== 0) reject(new Error(`the HTTP load generator exited with ${code}`)) })
    child.send({ port, ids, sockets, text })
  })

/** A bench server script (model-server.mjs, bare-router.mjs) forked and listening: { child, port }. */
export const forkServer = (script, args = []) =>
  new Promise((resolve, reject) => {
    const child = fork(path.join(benchDir, "lib", script), args, { stdio: ["ignore", "ignore", "inherit", "ipc"] })
    child.once("message", ({ port }) => resolve({ child, port }))
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code} before listening`)))
  })

/**
 * CPU a process has used so far, µs: its main thread's (the JavaScript) and
 * the whole process's, from /proc (clock ticks of 10 ms: read over seconds).
 */
export const processCpuUs = (pid) => {
  const ticks = (file) => {
    const fields = fs.readFileSync(file, "utf8").split(") ")[1].split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  }
  return { main: ticks(`/proc/${pid}/task/${pid}/stat`), all: ticks(`/proc/${pid}/stat`) }
}

/** Resident memory of a process, MiB, from /proc. */
export const processRssMb = (pid) => {
  const line = fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
  return Math.round(Number(line.split(/\s+/)[1]) / 102.4) / 10
}
