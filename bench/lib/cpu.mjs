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

/** All threads of `pid` (utime+stime of /proc/PID/stat), microseconds. */
export const processCpuUs = (pid) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}
