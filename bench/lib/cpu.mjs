/**
 * CPU time of a process's main thread, from the kernel's own accounting
 * (Linux /proc): /proc/PID/task/PID/schedstat (nanoseconds on a CPU), or,
 * where schedstat is missing, utime+stime of /proc/PID/task/PID/stat (clock
 * ticks, 10 ms each). The main thread only: libuv's pool and V8's GC and
 * compiler threads are not in it.
 */
import * as fs from "node:fs"

const TICK_US = 10_000 // USER_HZ is 100 on Linux

/** Microseconds the main thread of `pid` has spent on a CPU so far. */
export const mainThreadCpuUs = (pid) => {
  try {
    const schedstat = fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8")
    return Number(schedstat.split(" ")[0]) / 1000
  } catch {
    const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * TICK_US
  }
}

/**
 * Microseconds on a CPU so far of `pid`'s main thread and of all its other
 * threads together (each thread's schedstat; NaN where /proc has none).
 */
export const threadsCpuUs = (pid) => {
  if (!fs.existsSync(`/proc/${pid}/task`)) return { main: Number.NaN, others: Number.NaN }
  let main = 0
  let others = 0
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let ns = 0
    try {
      ns = Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0])
    } catch {
      continue // the thread ended meanwhile
    }
    if (Number(tid) === pid) main = ns / 1000
    else others += ns / 1000
  }
  return { main, others }
}

/** All threads of `pid` (utime+stime of /proc/PID/stat), microseconds. */
export const processCpuUs = (pid) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}

/**
 * Runs each variant `[name, run]` (run: () => Promise) 300 times untimed,
 * then in `rounds` interleaved batches totalling about `n` runs each
 * (`alternate`: every other round in reverse order). Wall time of each run
 * (µs) and this process's main-thread CPU per variant (µs, total).
 */
export const interleavedRuns = async (variants, { n, rounds, alternate = false }) => {
  const times = variants.map(() => [])
  const cpu = variants.map(() => 0)
  for (const [, run] of variants) for (let i = 0; i < 300; i++) await run()
  const batch = Math.ceil(n / rounds)
  for (let r = 0; r < rounds; r++) {
    const order = alternate && r % 2 === 1 ? [...variants.keys()].reverse() : [...variants.keys()]
    for (const k of order) {
      const run = variants[k][1]
      const cpu0 = mainThreadCpuUs(process.pid)
      for (let i = 0; i < batch; i++) {
        const t0 = performance.now()
        await run()
        times[k].push((performance.now() - t0) * 1000)
      }
      cpu[k] += mainThreadCpuUs(process.pid) - cpu0
    }
  }
  return { times, cpu, batch }
}
