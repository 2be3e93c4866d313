/**
 * Sums a V8 CPU profile (`node --cpu-prof`) over a time window: self time by
 * function and by file, inclusive time of the project's (dist/) functions,
 * and named groups (a sample counts for a group when a matching frame is
 * anywhere on its stack). Shared by bench/profile.mjs and
 * bench/profile-memory.mjs.
 */
import * as path from "node:path"
import { distDir, repoDir } from "./work.mjs"

/** A frame's file, relative to the repository or to node_modules. */
export const where = (frame) => {
  const url = frame.url.replace(/^file:\/\//, "")
  return url.startsWith(repoDir) ? path.relative(repoDir, url) : url.replace(/^.*node_modules\//, "")
}

export const label = (frame) => `${frame.functionName || "(anonymous)"} ${where(frame)}:${frame.lineNumber + 1}`

const isProject = (frame) => frame.url.includes(`${distDir}/`)

/** Microseconds per key, for samples between `from` and `to` (profile clock, µs). */
export const summarise = (profile, { from, to, groups: named = [] }) => {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const groups = new Map(named.map(([name]) => [name, 0]))
  const self = new Map()
  const byFile = new Map()
  const inclusiveProject = new Map()
  const add = (map, key, dt) => map.set(key, (map.get(key) ?? 0) + dt)
  let total = 0
  let time = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i]
    const dt = profile.timeDeltas[i + 1] ?? 0
    if (time < from || time > to) continue
    const node = nodes.get(profile.samples[i])
    if (node.callFrame.functionName === "(idle)") continue
    total += dt
    add(self, label(node.callFrame), dt)
    add(byFile, where(node.callFrame) || node.callFrame.functionName, dt)
    const frames = []
    for (let id = node.id; id !== undefined; id = parent.get(id)) frames.push(nodes.get(id).callFrame)
    for (const [name, match] of named) if (frames.some(match)) add(groups, name, dt)
    const seen = new Set()
    for (const frame of frames) {
      if (!isProject(frame)) continue
      const key = label(frame)
      if (seen.has(key)) continue
      seen.add(key)
      add(inclusiveProject, key, dt)
    }
  }
  return { total, self, byFile, inclusiveProject, groups }
}

/** The `n` largest entries of a map of times. */
export const top = (map, n) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n)
