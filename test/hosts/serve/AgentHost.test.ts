import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as AgentId from "../../../src/hosts/serve/AgentId.js"
import * as AgentStatus from "../../../src/hosts/serve/AgentStatus.js"
import * as Agent from "../../../src/agent/Agent.js"
import type { MessagesRequest } from "../../../src/ports/Brain.js"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import { eventually } from "../../support/Sandbox.js"
import { advanceTo } from "../../support/TestClockWait.js"
import { echoBrain, historyOf, isCompaction, lastUserText, startHost, tempDir } from "./Kit.js"

/** A host over a fresh agents directory, made for the test to lay agents in by hand. */
const hostOverAgentsDir = Effect.gen(function*() {
  const root = tempDir()
  const agents = yield* startHost(root, echoBrain().layer)
  const dir = path.join(root, "agents")
  fs.mkdirSync(dir, { recursive: true })
  return { agents, dir }
})

/** Runs `effect`, counting the turns of the event loop it let go by meanwhile. */
const withLoopTurns = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<[A, number], E> =>
  Effect.suspend(() => {
    let turns = 0
    let running = true
    const count = () => {
      if (!running) return
      turns++
      setImmediate(count)
    }
    setImmediate(count)
    return Effect.map(Effect.ensuring(effect, Effect.sync(() => { running = false })), (a) => [a, turns] as [A, number])
  })

const lastContent = (request: MessagesRequest) => request.messages[request.messages.length - 1]?.content

describe("AgentId", () => {
  it("refuses ids that are not directory names under the rule, naming id and rule", () => {
    for (const bad of ["..", ".", "A", "a/b", "", "-a", "a".repeat(65), "a b", "é"]) {
      const parsed = AgentId.parse(bad)
      expect(parsed._tag, bad).toBe("Failure")
      if (parsed._tag === "Failure") {
        expect(parsed.failure.message).toContain(JSON.stringify(bad))
        expect(parsed.failure.message).toContain(AgentId.RULE)
      }
    }
    for (const good of ["a", "0", "discord-c123", "a.b_c-d", "a".repeat(64)]) expect(AgentId.is(good), good).toBe(true)
  })
})

describe("AgentHost", () => {
  it.live("answers many agents concurrently, each in arrival order, each with its own history", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const brain = echoBrain()
      const agents = yield* startHost(root, brain.layer)
      const ids = Array.from({ length: 20 }, (_, n) => `agent-${n}`)
      const perAgent = 5
      // Each agent's messages in order; agents side by side.
      const replies = yield* Effect.forEach(ids, (id) =>
        Effect.forEach(Array.from({ length: perAgent }, (_, n) => n), (n) =>
          agents.send(id, { text: `${id} message ${n}` }), { concurrency: "unbounded" }), { concurrency: "unbounded" })
      replies.forEach((answers, index) =>
        answers.forEach((answer, n) => expect(answer).toEqual({ reply: `echo ${ids[index]} message ${n}`, stored: true }))
      )
      for (const id of ids) {
        expect(historyOf(root, id).map((line) => line.content)).toEqual(
          Array.from({ length: perAgent }, (_, n) => [`${id} message ${n}`, `echo ${id} message ${n}`]).flat()
        )
      }
      const listed = (yield* agents.list({ limit: 1000 })).agents
      expect(listed.map((info) => info.id)).toEqual([...ids].sort())
      expect(listed.every((info) => info.historyLines === 2 * perAgent)).toBe(true)
    }))

  it.live("lists many agents a step at a time, the event loop turning between steps, and only real agent directories", () =>
    Effect.gen(function*() {
      const { agents, dir } = yield* hostOverAgentsDir
      const ids = Array.from({ length: 200 }, (_, n) => `agent-${String(n).padStart(3, "0")}`)
      ids.forEach((id, n) => {
        fs.mkdirSync(path.join(dir, id))
        fs.writeFileSync(path.join(dir, id, "history.jsonl"), `${JSON.stringify({ role: "user", content: "hi" })}\n`.repeat(n % 3))
      })
      // Named like agents, but not directories of their own.
      fs.writeFileSync(path.join(dir, "zz-a-file"), "")
      fs.symlinkSync(path.join(dir, ids[0]!), path.join(dir, "zz-a-link"))
      const [listed, turns] = yield* withLoopTurns(agents.list({ limit: 1000 }))
      expect(listed.agents.map((info) => info.id)).toEqual(ids)
      expect(listed.agents.map((info) => info.historyLines)).toEqual(ids.map((_, n) => n % 3))
      expect(listed.next).toBeNull()
      // 200 agents in steps of 32: seven steps, a turn of the loop between each two.
      expect(turns).toBeGreaterThanOrEqual(6)
    }))

  it.live("lists a page at a time: each page goes on after the last id of the one before, and the last says there is no next", () =>
    Effect.gen(function*() {
      const { agents, dir } = yield* hostOverAgentsDir
      // Made out of order, with ids that sort differently by locale ('-' and '.' before digits, byte by byte).
      const ids = ["b", "a-2", "a.1", "a1", "a_0", "c", "b-9"]
      for (const id of ids) fs.mkdirSync(path.join(dir, id))
      // The last id is no agent (a file): a page that ends before it still points past it.
      fs.writeFileSync(path.join(dir, "d"), "")
      const pages: Array<ReadonlyArray<string>> = []
      const nexts: Array<string | null> = []
      let after: string | undefined
      do {
        const page = yield* agents.list({ after, limit: 3 })
        pages.push(page.agents.map((info) => info.id))
        nexts.push(page.next)
        after = page.next ?? undefined
      } while (after !== undefined)
      expect(pages).toEqual([["a-2", "a.1", "a1"], ["a_0", "b", "b-9"], ["c"]])
      expect(nexts).toEqual(["a1", "b-9", null])
      expect((yield* agents.list({ after: "b-9", limit: 1 })).agents.map((info) => info.id)).toEqual(["c"])
      // `after` need not be an agent: the page starts at the next id there is.
      expect((yield* agents.list({ after: "a2", limit: 10 })).agents.map((info) => info.id)).toEqual(["a_0", "b", "b-9", "c"])
      expect(yield* agents.list({ after: "zzz", limit: 10 })).toEqual({ agents: [], next: null })
    }))

  it.live("finds agents that left messages unanswered a step at a time, the event loop turning between steps", () =>
    Effect.gen(function*() {
      const dir = path.join(tempDir(), "agents")
      const ids = Array.from({ length: 200 }, (_, n) => `agent-${String(n).padStart(3, "0")}`)
      for (const [n, id] of ids.entries()) {
        fs.mkdirSync(path.join(dir, id), { recursive: true })
        fs.writeFileSync(path.join(dir, id, ".inbox.jsonl"), n % 40 === 7 ? `${JSON.stringify({ accepted: 1, key: "k", text: "hi" })}\n` : "")
      }
      fs.writeFileSync(path.join(dir, "agent-zzz"), "a file, not an agent")
      const found: Array<string> = []
      const [total, turns] = yield* withLoopTurns(
        AgentStatus.forEachUnanswered([...ids, "agent-zzz"], (id) => path.join(dir, id), (id) => Effect.sync(() => found.push(id)))
      )
      expect(found).toEqual(["agent-007", "agent-047", "agent-087", "agent-127", "agent-167"])
      expect(total).toBe(5)
      // 201 names in steps of 32: seven steps, a turn of the loop between each two.
      expect(turns).toBeGreaterThanOrEqual(6)
    }))

  it.live("answers what many agents left unanswered without being sent anything, the host up meanwhile", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const ids = Array.from({ length: 70 }, (_, n) => `left-${String(n).padStart(2, "0")}`)
      for (const id of ids) {
        fs.mkdirSync(path.join(root, "agents", id), { recursive: true })
        fs.writeFileSync(path.join(root, "agents", id, ".inbox.jsonl"), `${JSON.stringify({ accepted: 1, key: "aaaa", channel: "http", text: `to ${id}` })}\n`)
      }
      const agents = yield* startHost(root, echoBrain().layer)
      expect((yield* agents.send("fresh", { text: "hi" })).reply).toBe("echo hi")
      yield* eventually("every agent's left message to be answered", () =>
        ids.every((id) => historyOf(root, id).length >= 2) ? true : undefined)
      for (const id of ids) {
        expect(historyOf(root, id).map((line) => line.content)).toEqual([`to ${id}`, `echo to ${id}`])
        expect(fs.readFileSync(path.join(root, "agents", id, ".inbox.jsonl"), "utf8")).toBe("")
      }
    }))

  it.live("refuses bad ids without creating anything", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = yield* startHost(root, echoBrain().layer)
      for (const bad of ["..", "A", "a/b", "."]) {
        const exit = yield* Effect.exit(agents.send(bad, { text: "hi" }))
        expect(exit).toMatchObject({ _tag: "Failure" })
        if (Exit.isFailure(exit)) expect(JSON.stringify(exit.cause)).toContain("bad-id")
      }
      expect(fs.readdirSync(path.join(root, "agents"))).toEqual([])
    }))

  it.live("uses the host's soul for an agent without one, and the agent's own otherwise", () =>
    Effect.gen(function*() {
      const root = tempDir()
      fs.mkdirSync(path.join(root, "memory"))
      fs.writeFileSync(path.join(root, "memory", "soul.md"), "the default soul\n")
      fs.mkdirSync(path.join(root, "agents", "own"), { recursive: true })
      fs.writeFileSync(path.join(root, "agents", "own", "soul.md"), "my own soul\n")
      const brain = echoBrain()
      const agents = yield* startHost(root, brain.layer)
      yield* agents.send("plain", { text: "hi" })
      yield* agents.send("own", { text: "hi" })
      expect(brain.requests.map((request) => request.system)).toEqual(["the default soul", "my own soul"])
    }))

  it.live("applies an agent's config.env and refuses keys it may not set", () =>
    Effect.gen(function*() {
      const root = tempDir()
      fs.mkdirSync(path.join(root, "agents", "tuned"), { recursive: true })
      fs.writeFileSync(path.join(root, "agents", "tuned", "config.env"), "PLANCKCLAW_MODEL=special-model\n")
      fs.mkdirSync(path.join(root, "agents", "sneaky"), { recursive: true })
      fs.writeFileSync(path.join(root, "agents", "sneaky", "config.env"), "ANTHROPIC_API_KEY=x\nPLANCKCLAW_DIR=/etc\n")
      const brain = echoBrain()
      const agents = yield* startHost(root, brain.layer)
      yield* agents.send("tuned", { text: "hi" })
      yield* agents.send("other", { text: "hi" })
      expect(brain.requests.map((request) => request.model)).toEqual(["special-model", "claude-haiku-4-5-20251001"])
      const refused = yield* Effect.flip(agents.send("sneaky", { text: "hi" }))
      expect(refused.reason).toBe("unavailable")
      expect(refused.message).toContain("refused: ANTHROPIC_API_KEY, PLANCKCLAW_DIR")
      expect(historyOf(root, "sneaky")).toEqual([])
    }))

  it.effect("releases an idle agent and starts it again on its next message (TestClock)", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = yield* startHost(root, echoBrain().layer, { PLANCKCLAW_AGENT_IDLE: "60" })
      const runLock = path.join(root, "agents", "sleepy", ".planckclaw-run.lock")
      yield* agents.send("sleepy", { text: "one" })
      expect((yield* agents.get("sleepy")).state).toBe("running")
      // Held while started, as a run holds its memory: a hard link to the host's owner file, naming this process.
      expect(fs.readFileSync(runLock, "utf8")).toBe(`${process.pid}\n`)
      const owner = path.join(root, "agents", `.planckclaw-owner-${process.pid}`)
      expect(fs.statSync(runLock).ino).toBe(fs.statSync(owner).ino)
      yield* TestClock.adjust("59 seconds")
      expect((yield* agents.get("sleepy")).state).toBe("running")
      yield* TestClock.adjust("2 seconds")
      expect((yield* agents.get("sleepy")).state).toBe("released")
      expect(fs.existsSync(runLock)).toBe(false)
      expect(yield* agents.send("sleepy", { text: "two" })).toEqual({ reply: "echo two", stored: true })
      expect((yield* agents.get("sleepy")).state).toBe("running")
      expect(historyOf(root, "sleepy").map((line) => line.content)).toEqual(["one", "echo one", "two", "echo two"])
    }).pipe(Effect.scoped))

  it.effect("a turn's own timeouts fire: the brain's wait is cut at its deadline (TestClock)", () =>
    Effect.gen(function*() {
      const root = tempDir()
      // As the HTTP brains and the claws bound each wait: a race with the deadline, the loser interrupted.
      const brain = echoBrain((request) =>
        lastContent(request) === "hang"
          ? Effect.never.pipe(
            Effect.as(ScriptedBrain.text("unreachable")),
            Effect.timeoutOrElse({
              duration: "3 seconds",
              orElse: () => Effect.succeed(ScriptedBrain.text("gave up after 3 s"))
            })
          )
          : undefined
      )
      const agents = yield* startHost(root, brain.layer)
      const reply = yield* Effect.forkChild(agents.send("patient", { text: "hang" }))
      // Moved once the brain's wait has begun (docs/development.md), not after a number of yields.
      yield* advanceTo(3_000)
      expect(yield* Fiber.join(reply)).toEqual({ reply: "gave up after 3 s", stored: true })
    }).pipe(Effect.scoped))

  it.live("refuses an agent another live process holds, journaling nothing; takes over the lock of a dead one", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = yield* startHost(root, echoBrain().layer)
      // Another planckclaw (a run, or a second serve) on this agent: a live process named by the run lock.
      const other = yield* Effect.acquireRelease(
        Effect.sync(() => spawn("sleep", ["60"], { stdio: "ignore" })),
        (child) => Effect.sync(() => child.kill("SIGKILL"))
      )
      const directory = path.join(root, "agents", "shared")
      fs.mkdirSync(directory, { recursive: true })
      fs.symlinkSync(String(other.pid), path.join(directory, ".planckclaw-run.lock"))

      const refused = yield* Effect.flip(agents.send("shared", { text: "mine?" }))
      expect(refused.reason).toBe("unavailable")
      expect(refused.message).toBe(`agent shared: another planckclaw process (pid ${other.pid}) is using ${directory}`)
      // Its journal and history are the other process's: nothing was written to them.
      expect(fs.readdirSync(directory)).toEqual([".planckclaw-run.lock"])

      yield* Effect.callback<void>((resume) => {
        other.once("exit", () => resume(Effect.void))
        other.kill("SIGKILL")
      })
      expect(yield* agents.send("shared", { text: "mine now" })).toEqual({ reply: "echo mine now", stored: true })
      expect(fs.readFileSync(path.join(directory, ".planckclaw-run.lock"), "utf8")).toBe(`${process.pid}\n`)
    }))

  it.live("refuses an agent whose memory holds a planted directory or link, accepting nothing; answers once it is fixed", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = yield* startHost(root, echoBrain().layer)
      const directory = path.join(root, "agents", "planted")
      fs.mkdirSync(path.join(directory, "history.jsonl"), { recursive: true })
      const refused = yield* Effect.flip(agents.send("planted", { text: "kept?" }))
      expect(refused.reason).toBe("unavailable")
      expect(refused.message).toBe(
        `agent planted: ${path.join(directory, "history.jsonl")} is not a regular file; refusing to use it as memory`
      )
      // Not accepted: no journal a later start would answer behind the caller's back, and the lock let go.
      expect(fs.readdirSync(directory)).toEqual(["history.jsonl"])

      fs.rmdirSync(path.join(directory, "history.jsonl"))
      fs.symlinkSync("/etc/passwd", path.join(directory, "summary.md"))
      const linked = yield* Effect.flip(agents.send("planted", { text: "kept?" }))
      expect(linked.message).toContain(`${path.join(directory, "summary.md")} is a symbolic link`)

      fs.unlinkSync(path.join(directory, "summary.md"))
      expect(yield* agents.send("planted", { text: "now" })).toEqual({ reply: "echo now", stored: true })
    }))

  it.live("gives the same reply for the same Idempotency-Key without a second turn, also after a restart", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const brain = echoBrain()
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const agents = yield* startHost(root, brain.layer)
        const once = yield* agents.send("idem", { text: "pay", idempotencyKey: "k-1" })
        const twice = yield* agents.send("idem", { text: "pay", idempotencyKey: "k-1" })
        // Concurrent retries of a new key share one turn.
        const both = yield* Effect.all([
          agents.send("idem", { text: "ship", idempotencyKey: "k-2" }),
          agents.send("idem", { text: "ship", idempotencyKey: "k-2" })
        ], { concurrency: "unbounded" })
        expect(twice).toEqual(once)
        expect(both[0]).toEqual(both[1])
        return once
      }))
      expect(brain.requests.length).toBe(2)
      const agents = yield* startHost(root, brain.layer)
      expect(yield* agents.send("idem", { text: "pay", idempotencyKey: "k-1" })).toEqual(first)
      expect(brain.requests.length).toBe(2)
      expect(yield* agents.send("other", { text: "pay", idempotencyKey: "k-1" })).toEqual({ reply: "echo pay", stored: true })
      expect(brain.requests.length).toBe(3)
      expect(historyOf(root, "idem").length).toBe(4)
    }))

  it.live("refuses an Idempotency-Key sent again with another message (key-reused), answered or in flight, also after a restart", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const gate = yield* Deferred.make<void>()
      const brain = echoBrain((request) => lastUserText(request) === "slow" ? Effect.as(Deferred.await(gate), ScriptedBrain.text("echo slow")) : undefined)
      yield* Effect.scoped(Effect.gen(function*() {
        const agents = yield* startHost(root, brain.layer)
        expect(yield* agents.send("keys", { text: "pay 10", idempotencyKey: "k-1" })).toEqual({ reply: "echo pay 10", stored: true })
        const other = yield* Effect.flip(agents.send("keys", { text: "pay 1000", idempotencyKey: "k-1" }))
        expect(other.reason).toBe("key-reused")
        expect(other.message).toContain("Idempotency-Key \"k-1\" was already used for another message")
        expect((yield* Effect.flip(agents.send("keys", { text: "pay 10", channel: "elsewhere", idempotencyKey: "k-1" }))).reason).toBe("key-reused")
        // In flight: the same message waits for the same reply, another is refused at once.
        const first = yield* Effect.forkChild(agents.send("keys", { text: "slow", idempotencyKey: "k-2" }))
        yield* eventually("the slow turn asked", () => brain.requests.some((request) => lastUserText(request) === "slow") || undefined)
        expect((yield* Effect.flip(agents.send("keys", { text: "fast", idempotencyKey: "k-2" }))).reason).toBe("key-reused")
        const again = yield* Effect.forkChild(agents.send("keys", { text: "slow", idempotencyKey: "k-2" }))
        yield* Deferred.succeed(gate, undefined)
        expect(yield* Fiber.join(first)).toEqual({ reply: "echo slow", stored: true })
        expect(yield* Fiber.join(again)).toEqual({ reply: "echo slow", stored: true })
      }))
      const agents = yield* startHost(root, brain.layer)
      expect((yield* Effect.flip(agents.send("keys", { text: "pay 1000", idempotencyKey: "k-1" }))).reason).toBe("key-reused")
      expect(yield* agents.send("keys", { text: "pay 10", idempotencyKey: "k-1" })).toEqual({ reply: "echo pay 10", stored: true })
      expect(brain.requests.length).toBe(2)
    }))

  it.live("keeps no failure under an Idempotency-Key: the retry the apology asks for gets a turn", () =>
    Effect.gen(function*() {
      const root = tempDir()
      let down = true
      const brain = echoBrain(() => down ? Effect.die("the brain is down") : undefined)
      const agents = yield* startHost(root, brain.layer)
      const failed = yield* agents.send("flaky", { text: "hello", idempotencyKey: "f-1" })
      expect(failed).toEqual({ reply: Agent.APOLOGY, stored: false, notAnswered: "failed" })
      down = false
      expect(yield* agents.send("flaky", { text: "hello", idempotencyKey: "f-1" })).toEqual({ reply: "echo hello", stored: true })
      expect(yield* agents.send("flaky", { text: "hello", idempotencyKey: "f-1" })).toEqual({ reply: "echo hello", stored: true })
      expect(brain.requests.length).toBe(2)
    }))

  it.live("answers after a crash what was journaled and not answered, once, with its key remembered", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const dir = path.join(root, "agents", "crashed")
      fs.mkdirSync(dir, { recursive: true })
      // What a killed run leaves: two accepted messages, no reply yet.
      fs.writeFileSync(path.join(dir, ".inbox.jsonl"), [
        JSON.stringify({ accepted: 1, key: "aaaa", idempotencyKey: "retry-me", channel: "http", text: "first" }),
        JSON.stringify({ accepted: 2, key: "bbbb", channel: "http", text: "second" })
      ].join("\n") + "\n")
      const brain = echoBrain()
      const agents = yield* startHost(root, brain.layer)
      // The caller retrying with its key gets the recovered message's reply, not a second turn.
      expect(yield* agents.send("crashed", { text: "first", idempotencyKey: "retry-me" })).toEqual({ reply: "echo first", stored: true })
      yield* agents.send("crashed", { text: "third" })
      expect(historyOf(root, "crashed").map((line) => line.content)).toEqual(
        ["first", "echo first", "second", "echo second", "third", "echo third"]
      )
      expect(brain.requests.length).toBe(3)
      expect(fs.readFileSync(path.join(dir, ".inbox.jsonl"), "utf8")).toBe("")
    }))

  it.live("a defect in one agent restarts that agent only", () =>
    Effect.gen(function*() {
      const root = tempDir()
      fs.mkdirSync(path.join(root, "agents", "fragile"), { recursive: true })
      fs.writeFileSync(path.join(root, "agents", "fragile", "config.env"), "HISTORY_MAX=2\nHISTORY_KEEP=1\n")
      // The turn's own defects become an apology; a compaction's escapes the message.
      const brain = echoBrain((request) =>
        isCompaction(request) ? Effect.die("compaction bug") :
        JSON.stringify(request.messages).includes("explode") ? Effect.die("turn bug") : undefined
      )
      const agents = yield* startHost(root, brain.layer)
      expect(yield* agents.send("fragile", { text: "explode" })).toEqual({ reply: Agent.APOLOGY, stored: false, notAnswered: "failed" })
      const [fragile, steady] = yield* Effect.all([
        Effect.all([agents.send("fragile", { text: "a" }), agents.send("fragile", { text: "b" }), agents.send("fragile", { text: "c" })], { concurrency: "unbounded" }),
        agents.send("steady", { text: "hello" })
      ], { concurrency: "unbounded" })
      expect(steady).toEqual({ reply: "echo hello", stored: true })
      // "b" made history long enough to compact, which died: "b" was answered, the agent restarted and answered "c".
      expect(fragile.map((reply) => reply.reply)).toEqual(["echo a", "echo b", "echo c"])
      expect(historyOf(root, "fragile").map((line) => line.content)).toEqual(["a", "echo a", "b", "echo b", "c", "echo c"])
      expect(fs.readFileSync(path.join(root, "agents", "fragile", ".inbox.jsonl"), "utf8")).toBe("")
    }))

  it.live("compacts one agent on request; get and compact of an unknown agent are not-found", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = yield* startHost(root, echoBrain().layer, { HISTORY_KEEP: "2" })
      for (const text of ["a", "b", "c"]) yield* agents.send("talky", { text })
      const result = yield* agents.compact("talky")
      expect(result).toMatchObject({ compacted: true, summarised: 4, kept: 2 })
      expect(fs.readFileSync(path.join(root, "agents", "talky", "summary.md"), "utf8")).toBe("a summary\n")
      expect((yield* agents.get("talky")).historyLines).toBe(2)
      expect((yield* Effect.flip(agents.get("nobody"))).reason).toBe("not-found")
      expect((yield* Effect.flip(agents.compact("nobody"))).reason).toBe("not-found")
      expect(fs.existsSync(path.join(root, "agents", "nobody"))).toBe(false)
    }))
})
