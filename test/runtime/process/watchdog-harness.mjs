/**
 * A stand-in for planckclaw around the built Watchdog (dist/, so build
 * first): it starts one guarded group running a shell that ignores SIGTERM
 * and has a child, and dies or waits as the scenario says. `node:child_process`'s
 * spawn is wrapped (and the ES module bindings synced) to put a fault at an
 * exact instant:
 *
 * - die-at-spawn: SIGKILL itself the instant the group's process exists,
 *   before anything could list it.
 * - no-watchdog: the watchdog's own spawn throws (as EAGAIN does).
 * - wait: run until killed; a replacement watchdog's spawn returns only a
 *   second after its process exists (as when this process is preempted
 *   there), so a kill comes before anything more is written to it.
 * - own-group: as wait, the child being `timeout 1000 sh -c …` (a group of
 *   its own), whose command writes `grandchild`.
 *
 * Files in DIR: `spawned` (the group's pid, die-at-spawn), `ran` (the
 * command's pid, written by the command), `child` (its child's pid),
 * `result` (how spawnGuarded answered).
 *
 * Usage: node watchdog-harness.mjs SCENARIO DIR
 */
import childProcess from "node:child_process"
import * as fs from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import * as path from "node:path"

const [scenario, dir] = process.argv.slice(2)
const realSpawn = childProcess.spawn
let watchdogs = 0
childProcess.spawn = (command, args, options) => {
  const isWatchdog = args?.[1]?.includes("groups=") === true
  if (isWatchdog && scenario === "no-watchdog") {
    throw Object.assign(new Error("spawn /bin/sh EAGAIN"), { code: "EAGAIN" })
  }
  const child = realSpawn(command, args, options)
  if (isWatchdog && scenario === "wait" && watchdogs++ > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000)
  if (!isWatchdog && scenario === "die-at-spawn") {
    fs.writeFileSync(path.join(dir, "spawned"), String(child.pid))
    process.kill(process.pid, "SIGKILL")
  }
  return child
}
syncBuiltinESMExports()

const { Effect, Scope } = await import("effect")
const Watchdog = await import("../../../dist/runtime/process/Watchdog.js")
// The watchdog of a scope that this stand-in never closes: only its death is the end of file.
const watchdog = Effect.runSync(Scope.provide(Watchdog.make, Scope.makeUnsafe()))
// own-group: the child is GNU timeout, which makes a group of its own (within the session), and its command.
const job = scenario === "own-group"
  ? `timeout 1000 sh -c 'echo $$ > "${dir}/grandchild"; exec sleep 1000' &`
  : "sleep 1000 &"
const script = `echo $$ > "${dir}/ran"; trap '' TERM; ${job} echo $! > "${dir}/child"; wait`
const result = watchdog.spawnGuarded("/bin/sh", ["-c", script], {
  env: { PATH: "/usr/bin:/bin" },
  stdio: ["ignore", "ignore", "ignore"]
})
fs.writeFileSync(path.join(dir, "result"), result._tag === "Failure" ? `failed: ${result.failure.message}` : `started ${result.success.pid}`)
if (scenario === "wait" || scenario === "own-group") setInterval(() => undefined, 60_000)
