/**
 * Serve's agents' own mcp.json, against the real server-everything (from
 * node_modules, over stdio): two agents naming the same server share one
 * process; an agent's own server is offered to it alone, and wins over the
 * home's of the same name; the pool's bound refuses a server with why,
 * the claws still working; a bad file refuses only its tools; a server no
 * agent uses is stopped after the idle time (TestClock, no sleeps).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Result, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as McpConfig from "../../../src/claws/mcp/McpConfig.js"
import * as AgentMcp from "../../../src/hosts/serve/AgentMcp.js"
import * as McpPool from "../../../src/hosts/serve/McpPool.js"
import type { ClawsService } from "../../../src/ports/Claws.js"
import * as McpServers from "../../support/McpServers.js"
import * as Sandbox from "../../support/Sandbox.js"
import { yieldToEventLoop } from "../../support/TestClockWait.js"

const settings = { timeout: Duration.seconds(30), outputMax: 16_384, withheldSecrets: [] }

/** The host's claws: a script and the home's server "everything" (its echo answers as the home's). */
const base: ClawsService = {
  list: Effect.succeed({
    tools: [
      { name: "hello", description: "a claw", input_schema: { type: "object" } },
      { name: "mcp__everything__echo", description: "the home's echo", input_schema: { type: "object" } }
    ],
    problems: []
  }),
  call: (name) => Effect.succeed({ content: `the host answered ${name}`, isError: false })
}

const agentDir = (mcpJson?: string) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "planckclaw-agent-mcp-"))
  if (mcpJson !== undefined) Fs.writeFileSync(Path.join(dir, "mcp.json"), mcpJson)
  return dir
}

/** server-everything marked (in its environment) so this test can count its processes; `cwd` fixed so two files name the same server. */
const marked = (mark: string) => ({ ...McpServers.everything({ PLANCKCLAW_TEST_MARK: mark }), cwd: Os.tmpdir() })
const fileOf = (servers: Record<string, unknown>) => JSON.stringify({ mcpServers: servers })

/** A /proc file, or undefined when its process is gone meanwhile. */
const readOr = (file: string): string | undefined => Result.getOrUndefined(Result.try(() => Fs.readFileSync(file, "utf8")))

/** The pids of this process's children started with `mark` in their environment. */
const processesMarked = (mark: string): Array<number> =>
  Fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => {
    const stat = readOr(`/proc/${pid}/stat`)
    const ppid = stat === undefined ? undefined : Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
    return ppid === process.pid && (readOr(`/proc/${pid}/environ`) ?? "").split("\0").includes(`PLANCKCLAW_TEST_MARK=${mark}`)
  })

const clawsIn = (scope: Scope.Scope, directory: string, pool: McpPool.McpPool | undefined) =>
  AgentMcp.clawsFor({ directory, base, pool }).pipe(Scope.provide(scope))

const names = (claws: ClawsService) => Effect.map(claws.list, (catalog) => catalog.tools.map((tool) => tool.name))

describe("serve: each agent's own mcp.json", () => {
  it.live("two agents naming the same server share one process; an agent's own server is offered to it alone", () =>
    Effect.gen(function*() {
      const tag = Math.random().toString(36).slice(2)
      const pool = yield* McpPool.make({ capacity: 4, connection: settings })
      const alice = yield* clawsIn(yield* Effect.scope, agentDir(fileOf({ everything: marked(`shared-${tag}`) })), pool)
      // Bob names the same server otherwise, and has one of his own.
      const bob = yield* clawsIn(
        yield* Effect.scope,
        agentDir(fileOf({ common: marked(`shared-${tag}`), mine: marked(`own-${tag}`) })),
        pool
      )
      expect(yield* alice.call("mcp__everything__echo", { message: "from alice" })).toEqual({ content: "Echo: from alice", isError: false })
      expect(yield* bob.call("mcp__common__echo", { message: "from bob" })).toEqual({ content: "Echo: from bob", isError: false })
      expect(yield* bob.call("mcp__mine__echo", { message: "bob's own" })).toEqual({ content: "Echo: bob's own", isError: false })
      expect(processesMarked(`shared-${tag}`)).toHaveLength(1)
      expect(processesMarked(`own-${tag}`)).toHaveLength(1)

      const aliceTools = yield* names(alice)
      expect(aliceTools).toContain("hello")
      expect(aliceTools.filter((name) => name.startsWith("mcp__mine__"))).toEqual([])
      expect((yield* alice.call("mcp__mine__echo", { message: "x" })).content).toBe("the host answered mcp__mine__echo")
      // Alice's own "everything" wins over the home's of that name: listed once, answered by her server.
      expect(aliceTools.filter((name) => name === "mcp__everything__echo")).toHaveLength(1)
      const aliceEcho = (yield* alice.list).tools.find((tool) => tool.name === "mcp__everything__echo")
      expect(aliceEcho?.description).toBe("Echoes back the input string")
      const bobTools = yield* names(bob)
      expect(bobTools).toEqual(expect.arrayContaining(["hello", "mcp__everything__echo", "mcp__common__echo", "mcp__mine__echo"]))
      expect((yield* bob.call("mcp__everything__echo", { message: "x" })).content).toBe("the host answered mcp__everything__echo")
      expect((yield* bob.call("hello", {})).content).toBe("the host answered hello")
    }), 60_000)

  it.live("past the bound, an agent's new server is refused with why; its claws and the servers it holds still work", () =>
    Effect.gen(function*() {
      const tag = Math.random().toString(36).slice(2)
      const pool = yield* McpPool.make({ capacity: 1, connection: settings })
      const alice = yield* clawsIn(yield* Effect.scope, agentDir(fileOf({ everything: marked(`shared-${tag}`) })), pool)
      const bobDir = agentDir(fileOf({ everything: marked(`shared-${tag}`), mine: marked(`own-${tag}`) }))
      const bob = yield* clawsIn(yield* Effect.scope, bobDir, pool)
      const catalog = yield* bob.list
      expect(catalog.problems).toEqual([{
        source: `${Path.join(bobDir, "mcp.json")}: server "mine"`,
        reason: "refused: 1 MCP servers already run for the agents (PLANCKCLAW_MCP_SERVERS_MAX); it starts once one of them is no longer used"
      }])
      expect(catalog.tools.map((tool) => tool.name)).not.toContain("mcp__mine__echo")
      expect((yield* bob.call("mcp__mine__echo", { message: "x" })).isError).toBe(true)
      expect((yield* bob.call("hello", {})).content).toBe("the host answered hello")
      // The server already held by another agent is within the bound: shared, not refused.
      expect((yield* bob.call("mcp__everything__echo", { message: "shared" })).content).toBe("Echo: shared")
      expect((yield* alice.call("mcp__everything__echo", { message: "too" })).content).toBe("Echo: too")
      expect(processesMarked(`shared-${tag}`)).toHaveLength(1)
      expect(processesMarked(`own-${tag}`)).toEqual([])
    }), 60_000)

  it.live("an agent's own server that is not running is named with the agent's file, not the home's mcp.json", () =>
    Effect.gen(function*() {
      const pool = yield* McpPool.make({ capacity: 2, connection: settings })
      const directory = agentDir(fileOf({ broken: { command: Path.join(Os.tmpdir(), "no-such-mcp-server-here") } }))
      const claws = yield* clawsIn(yield* Effect.scope, directory, pool)
      const catalog = yield* claws.list
      expect(catalog.problems).toEqual([{
        source: `${Path.join(directory, "mcp.json")}: server "broken"`,
        reason: expect.stringMatching(/^not running: /)
      }])
      expect(catalog.tools.map((tool) => tool.name)).toEqual(["hello", "mcp__everything__echo"])
    }), 60_000)

  it.live("a bad mcp.json refuses only its own tools, with the file and the reason; without one, the host's claws as they are", () =>
    Effect.gen(function*() {
      const pool = yield* McpPool.make({ capacity: 4, connection: settings })
      const badDir = agentDir("{ not json")
      const bad = yield* clawsIn(yield* Effect.scope, badDir, pool)
      const catalog = yield* bad.list
      expect(catalog.problems).toHaveLength(1)
      expect(catalog.problems[0]!.source).toBe(Path.join(badDir, "mcp.json"))
      expect(catalog.problems[0]!.reason).toMatch(/^not JSON: /)
      expect(catalog.tools.map((tool) => tool.name)).toEqual(["hello", "mcp__everything__echo"])
      expect((yield* bad.call("mcp__everything__echo", {})).content).toBe("the host answered mcp__everything__echo")
      expect(yield* clawsIn(yield* Effect.scope, agentDir(), pool)).toBe(base)
    }), 60_000)

  it.effect("a server no started agent uses is stopped after the idle time, not before; one asked again meanwhile is the same process", () =>
    Effect.gen(function*() {
      const tag = Math.random().toString(36).slice(2)
      const pool = yield* McpPool.make({ capacity: 4, connection: settings })
      const file = fileOf({ everything: marked(`idle-${tag}`) })
      const [aliceDir, bobDir] = [agentDir(file), agentDir(file)]
      const [aliceScope, bobScope] = [yield* Scope.make(), yield* Scope.make()]
      const alice = yield* clawsIn(aliceScope, aliceDir, pool)
      const bob = yield* clawsIn(bobScope, bobDir, pool)
      expect((yield* alice.call("mcp__everything__echo", { message: "one" })).content).toBe("Echo: one")
      expect((yield* bob.call("mcp__everything__echo", { message: "two" })).content).toBe("Echo: two")
      const [pid] = processesMarked(`idle-${tag}`)
      expect(processesMarked(`idle-${tag}`)).toEqual([pid])

      yield* Scope.close(aliceScope, Exit.void)
      yield* Scope.close(bobScope, Exit.void)
      yield* TestClock.adjust(Duration.millis(Duration.toMillis(McpPool.idleRelease) - 1))
      for (let pass = 0; pass < 20; pass++) yield* yieldToEventLoop
      expect(processesMarked(`idle-${tag}`)).toEqual([pid])
      // Started again within the idle time: the same process.
      const againScope = yield* Scope.make()
      const again = yield* clawsIn(againScope, aliceDir, pool)
      expect((yield* again.call("mcp__everything__echo", { message: "three" })).content).toBe("Echo: three")
      expect(processesMarked(`idle-${tag}`)).toEqual([pid])

      yield* Scope.close(againScope, Exit.void)
      yield* TestClock.adjust(McpPool.idleRelease)
      yield* Sandbox.gone("the server no agent uses", pid!).pipe(Sandbox.onLiveClock)
    }), 60_000)

  it.effect("a server stopped after its idle time is forgotten with it: started again, it has the name its new first agent gives", () =>
    Effect.gen(function*() {
      const pool = yield* McpPool.make({ capacity: 4, connection: settings })
      // The same server (command, args, env and cwd) under two names; never started, as no tool of it is used.
      const entryNamed = (name: string) => McpConfig.parse("/srv/agents/a/mcp.json", fileOf({ [name]: marked("never-started") })).servers[0]!
      const firstScope = yield* Scope.make()
      const first = yield* pool.acquire(entryNamed("notes")).pipe(Scope.provide(firstScope))
      expect(first.entry.name).toBe("notes")
      // Held meanwhile under another name: the same server, the first name.
      const heldScope = yield* Scope.make()
      expect((yield* pool.acquire(entryNamed("jotter")).pipe(Scope.provide(heldScope))).entry.name).toBe("notes")
      yield* Scope.close(firstScope, Exit.void)
      yield* Scope.close(heldScope, Exit.void)
      yield* TestClock.adjust(McpPool.idleRelease)
      const again = yield* pool.acquire(entryNamed("jotter")).pipe(Scope.provide(yield* Scope.make()))
      expect(again).not.toBe(first)
      expect(again.entry.name).toBe("jotter")
    }))
})
