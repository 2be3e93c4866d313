/**
 * The host warns when users other than this one could change an agent's
 * memory: the agents directory at start, an agent's directory at the
 * agent's start, when its group or other write bit is set.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AgentStatus from "../../../src/hosts/serve/AgentStatus.js"
import { captureLogs } from "../../support/LogCapture.js"
import { echoBrain, startHost, tempDir } from "./Kit.js"

const warnings = (lines: ReadonlyArray<string>) => lines.filter((line) => line.startsWith("WARN"))

describe("AgentHost: directories others can write", () => {
  it.live("warns at start for the agents directory, and at an agent's start for its directory", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const root = tempDir()
      const agentsDir = path.join(root, "agents")
      fs.mkdirSync(path.join(agentsDir, "open"), { recursive: true })
      fs.mkdirSync(path.join(agentsDir, "closed"), { mode: 0o700 })
      fs.chmodSync(agentsDir, 0o775)
      fs.chmodSync(path.join(agentsDir, "open"), 0o757)
      yield* Effect.gen(function*() {
        const agents = yield* startHost(root, echoBrain().layer)
        expect(warnings(logs.lines)).toEqual([
          `WARN PLANCKCLAW_AGENTS_DIR ${agentsDir} can be written by other users (mode 0775): ` +
          `they could change every agent's memory; chmod 700 ${agentsDir}`
        ])
        yield* agents.send("closed", { text: "hi" })
        expect(warnings(logs.lines)).toHaveLength(1)
        yield* agents.send("open", { text: "hi" })
        const agentDir = path.join(agentsDir, "open")
        expect(warnings(logs.lines).slice(1)).toEqual([
          `WARN agent directory ${agentDir} can be written by other users (mode 0757): ` +
          `they could change this agent's memory; chmod 700 ${agentDir}`
        ])
      }).pipe(Effect.scoped, Effect.provide(logs.layer))
    }))

  it.live("says nothing for directories only this user can write", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const root = tempDir()
      yield* Effect.gen(function*() {
        const agents = yield* startHost(root, echoBrain().layer)
        yield* agents.send("a", { text: "hi" })
      }).pipe(Effect.scoped, Effect.provide(logs.layer))
      expect(warnings(logs.lines)).toEqual([])
      // 0755 is fine: others may read, not write.
      fs.chmodSync(path.join(root, "agents"), 0o755)
      expect(AgentStatus.writableByOthers(path.join(root, "agents"))).toBeUndefined()
      expect(AgentStatus.writableByOthers(path.join(root, "nothing-here"))).toBeUndefined()
    }))

  it("names another user owning the directory", () => {
    const me = process.getuid?.()
    if (me === undefined) return // no uids on this platform
    // Root can give a directory away; anyone else finds / owned by root.
    const dir = me === 0 ? tempDir() : "/"
    if (me === 0) fs.chownSync(dir, 65534, 65534)
    const owner = fs.statSync(dir).uid
    expect(AgentStatus.writableByOthers(dir)).toEqual({
      problem: `is owned by uid ${owner}, not by this user (uid ${me})`,
      fix: "use a directory of your own"
    })
  })
})
