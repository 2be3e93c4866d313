/**
 * The bound on brain calls across agents, and what a started agent holds:
 * a slow agent delays another only when every permit of
 * PLANCKCLAW_MAX_CONCURRENT_TURNS is taken (TestClock, no sleeps), only
 * the PLANCKCLAW_AGENTS_HOLDING_FILES agents used last keep file descriptors,
 * and in a burst the first agents answer before the last are accepted.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Result, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedBrain from "../../../src/brain/ScriptedBrain.js"
import { eventually } from "../../support/Sandbox.js"
import { awaitPendingSleep } from "../../support/TestClockWait.js"
import { echoBrain, historyOf, isCompaction, startHost, tempDir } from "./Kit.js"

/** Slow for any message mentioning "slow": a minute of (test) time per brain call. */
const slowBrain = () =>
  echoBrain((request) =>
    JSON.stringify(request.messages).includes("slow")
      ? Effect.as(Effect.sleep("1 minute"), ScriptedBrain.text("done slowly"))
      : undefined
  )

/**
 * This process's descriptors open on files inside `dir`'s agent directories.
 * Not `dir` itself: the host's scan for messages left unanswered lists it on
 * libuv's thread pool, holding a descriptor on it while the listing runs,
 * which on a loaded machine can outlast the messages a test sends.
 */
const openUnder = (dir: string) =>
  fs.readdirSync("/proc/self/fd").flatMap((fd) => {
    // A descriptor closed since the listing has no link to read.
    const target = Result.getOrElse(Result.try(() => fs.readlinkSync(path.join("/proc/self/fd", fd))), () => "")
    return target.startsWith(`${dir}${path.sep}`) ? [target] : []
  })

/** The agents (directory names) holding any of `descriptors`. */
const holders = (descriptors: ReadonlyArray<string>) => [...new Set(descriptors.map((file) => path.basename(path.dirname(file))))].sort()

/** Lets every forked fiber run as far as it can without time passing. */
const settle = Effect.gen(function*() {
  for (let round = 0; round < 20; round++) yield* Effect.yieldNow
})

describe("AgentHost under load", () => {
  it.live("a burst of new agents: the first turns run while later messages are still being accepted, and all are answered", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agentsDir = path.join(root, "agents")
      // How many agents had journaled their message when each turn reached the brain.
      const acceptedAtCall: Array<number> = []
      const brain = echoBrain((request) => {
        if (isCompaction(request)) return undefined
        acceptedAtCall.push(fs.readdirSync(agentsDir).filter((id) => fs.existsSync(path.join(agentsDir, id, ".inbox.jsonl"))).length)
        return undefined
      })
      const agents = yield* startHost(root, brain.layer)
      const ids = Array.from({ length: 200 }, (_, n) => `burst-${n}`)
      const replies = yield* Effect.forEach(ids, (id) => agents.send(id, { text: id }), { concurrency: "unbounded" })
      expect(replies).toEqual(ids.map((id) => ({ reply: `echo ${id}`, stored: true })))
      expect(acceptedAtCall.length).toBe(ids.length)
      // Accepted all at once, the first turn would begin only once all 200 were journaled.
      expect(acceptedAtCall[0]).toBeLessThan(50)
    }))

  it.effect("a slow agent never delays another while a permit is free; with all taken, the others wait for one (TestClock)", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const brain = slowBrain()
      const agents = yield* startHost(root, brain.layer, { PLANCKCLAW_MAX_CONCURRENT_TURNS: "2", PLANCKCLAW_AGENTS_HOLDING_FILES: "0" })

      // One slow agent holds one permit: twenty fast agents are answered with no time passing.
      const slow = yield* Effect.forkChild(agents.send("slow-1", { text: "slow please" }))
      yield* settle
      const fast = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, n) => `fast-${n}`),
        (id) => agents.send(id, { text: `hi ${id}` }),
        { concurrency: "unbounded" }
      )
      expect(fast.map((reply) => reply.reply)).toEqual(Array.from({ length: 20 }, (_, n) => `echo hi fast-${n}`))
      expect(slow.pollUnsafe()).toBeUndefined()

      // A second slow agent takes the last permit: a fast one now waits for a permit, not for the slow agents' turns to end.
      const slow2 = yield* Effect.forkChild(agents.send("slow-2", { text: "slow too" }))
      // Both slow agents asleep in the brain before the clock moves (docs/development.md).
      yield* awaitPendingSleep(60_000, 2)
      const waiting = yield* Effect.forkChild(agents.send("fast-late", { text: "quick" }))
      yield* settle
      expect(waiting.pollUnsafe()).toBeUndefined()
      // Journaled and waiting for the brain, they hold no descriptor (none may keep any here): thousands may wait at once.
      expect(openUnder(path.join(root, "agents"))).toEqual([])
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(waiting)).toEqual({ reply: "echo quick", stored: true })
      expect(yield* Fiber.join(slow)).toEqual({ reply: "done slowly", stored: true })
      expect(yield* Fiber.join(slow2)).toEqual({ reply: "done slowly", stored: true })
      expect(historyOf(root, "slow-1").map((line) => line.content)).toEqual(["slow please", "done slowly"])
    }))

  it.live("only the agents used last keep their files open between messages, up to PLANCKCLAW_AGENTS_HOLDING_FILES; another's next message opens them again", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = yield* startHost(root, echoBrain().layer, { PLANCKCLAW_AGENTS_HOLDING_FILES: "5" })
      const ids = Array.from({ length: 30 }, (_, n) => `idle-${n}`)
      yield* Effect.forEach(ids, (id) => agents.send(id, { text: "one" }), { concurrency: "unbounded" })
      expect(yield* Effect.forEach(ids, (id) => Effect.map(agents.get(id), (info) => info.state))).toEqual(ids.map(() => "running"))
      const kept = openUnder(path.join(root, "agents"))
      expect(holders(kept).length).toBe(5)
      // History, its ledger (made by its first record, appended), the inbox journal and usage.jsonl.
      expect(kept.map((file) => path.basename(file)).sort()).toEqual([
        ...Array(5).fill(".history-ledger.json"),
        ...Array(5).fill(".inbox.jsonl"),
        ...Array(5).fill("history.jsonl"),
        ...Array(5).fill("usage.jsonl")
      ])

      // Answered one after another: the last five used are the ones keeping theirs, four files each.
      for (const id of ids) yield* agents.send(id, { text: "two" })
      const last = openUnder(path.join(root, "agents"))
      expect(holders(last)).toEqual(["idle-25", "idle-26", "idle-27", "idle-28", "idle-29"])
      expect(new Set(last.map((file) => path.basename(file)))).toEqual(new Set(["history.jsonl", ".history-ledger.json", ".inbox.jsonl", "usage.jsonl"]))
      expect(last.length).toBe(20)
      // idle-0 closed its files long ago: its next message opens them again.
      expect(yield* agents.send("idle-0", { text: "three" })).toEqual({ reply: "echo three", stored: true })
      expect(historyOf(root, "idle-0").map((line) => line.content)).toEqual(["one", "echo one", "two", "echo two", "three", "echo three"])
      expect(holders(openUnder(path.join(root, "agents")))).toEqual(["idle-0", "idle-26", "idle-27", "idle-28", "idle-29"])
    }))

  it.live("agents started again to answer retries from their idempotency keys keep no more files open than PLANCKCLAW_AGENTS_HOLDING_FILES", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const ids = Array.from({ length: 6 }, (_, n) => `again-${n}`)
      const send = (agents: Effect.Success<ReturnType<typeof startHost>>) =>
        Effect.forEach(ids, (id) => agents.send(id, { text: "one", idempotencyKey: `key-${id}` }), { concurrency: "unbounded" })
      yield* Effect.scoped(Effect.flatMap(startHost(root, echoBrain().layer), send))
      // A new host: each retry starts its agent again, which reads its journal and answers from its keys, with no turn.
      const agents = yield* startHost(root, echoBrain().layer, { PLANCKCLAW_AGENTS_HOLDING_FILES: "2" })
      expect(yield* send(agents)).toEqual(ids.map(() => ({ reply: "echo one", stored: true })))
      expect(historyOf(root, "again-0").map((line) => line.content)).toEqual(["one", "echo one"])
      expect(holders(openUnder(path.join(root, "agents"))).length).toBeLessThanOrEqual(2)
    }))

  it.live("agents whose files the budget keeps closing, other agents talking meanwhile, compact and lose, repeat or reorder no exchange", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const brain = echoBrain()
      const agents = yield* startHost(root, brain.layer, { PLANCKCLAW_AGENTS_HOLDING_FILES: "1", HISTORY_MAX: "8", HISTORY_KEEP: "2" })
      const ids = Array.from({ length: 8 }, (_, n) => `busy-${n}`)
      const messages = Array.from({ length: 26 }, (_, n) => `m${n}`)
      const talk = (agentIds: ReadonlyArray<string>, texts: ReadonlyArray<string>) =>
        Effect.forEach(agentIds, (id) =>
          Effect.forEach(texts, (text) => agents.send(id, { text: `${id} ${text}` }), { discard: true }), { concurrency: "unbounded", discard: true })
      yield* talk(ids, messages.slice(0, 20))
      // Their compactions now run; meanwhile they are sent more, and other agents' messages close their files.
      const others = Array.from({ length: 8 }, (_, n) => `other-${n}`)
      yield* Effect.all([talk(ids, messages.slice(20)), talk(others, messages.slice(0, 10))], { concurrency: "unbounded" })
      const whole = (id: string) => messages.flatMap((text) => [`${id} ${text}`, `echo ${id} ${text}`])
      // The compactions end in the background, after the replies.
      yield* eventually("every agent compacted", () =>
        ids.every((id) => fs.existsSync(path.join(root, "agents", id, "summary.md")) && historyOf(root, id).length <= 8) || undefined)
      for (const id of ids) {
        const kept = historyOf(root, id).map((line) => line.content)
        // What history keeps is the end of the conversation, exactly; the rest went into the summary.
        expect(kept.length).toBeGreaterThan(0)
        expect(kept).toEqual(whole(id).slice(whole(id).length - kept.length))
        expect(fs.readFileSync(path.join(root, "agents", id, "summary.md"), "utf8").trim()).toBe("a summary")
        expect(fs.readFileSync(path.join(root, "agents", id, ".inbox.jsonl"), "utf8")).toBe("")
      }
      expect(brain.requests.filter(isCompaction).length).toBeGreaterThanOrEqual(ids.length)
    }))

  it.live("an agent's files closed by the budget while its compaction commits beside its appends: nothing lost, repeated or reordered", () =>
    Effect.gen(function*() {
      const root = tempDir()
      // The compaction's brain call waits for the test: appends and evictions happen meanwhile.
      const summarise = yield* Deferred.make<void>()
      const brain = echoBrain((request) => isCompaction(request) ? Effect.as(Deferred.await(summarise), ScriptedBrain.text("a summary")) : undefined)
      const agents = yield* startHost(root, brain.layer, { PLANCKCLAW_AGENTS_HOLDING_FILES: "1", HISTORY_MAX: "8", HISTORY_KEEP: "2" })
      const said: Array<string> = []
      const say = (text: string) =>
        Effect.tap(agents.send("main", { text }), (reply) => Effect.sync(() => {
          expect(reply).toEqual({ reply: `echo ${text}`, stored: true })
          said.push(text, `echo ${text}`)
        }))
      const others = (round: number) =>
        Effect.forEach(["x", "y", "z"], (id) => agents.send(id, { text: `${id} ${round}` }), { concurrency: "unbounded", discard: true })

      for (let n = 0; n < 5; n++) yield* say(`m${n}`)
      yield* eventually("the compaction to ask the brain", () => brain.requests.some(isCompaction) || undefined)
      // While it waits: main appends (alone, beside the compaction), and other agents close main's files.
      for (let n = 5; n < 8; n++) {
        yield* say(`m${n}`)
        yield* others(n)
      }
      yield* Deferred.succeed(summarise, undefined)
      yield* eventually("the commit", () => fs.existsSync(path.join(root, "agents", "main", "summary.md")) || undefined)
      for (let n = 8; n < 11; n++) {
        yield* others(n)
        yield* say(`m${n}`)
      }
      yield* eventually("the compactions to end", () => historyOf(root, "main").length <= 8 || undefined)
      const kept = historyOf(root, "main").map((line) => line.content)
      expect(kept.length).toBeGreaterThan(0)
      expect(kept).toEqual(said.slice(said.length - kept.length))
      expect(fs.readFileSync(path.join(root, "agents", "main", "summary.md"), "utf8").trim()).toBe("a summary")
      expect(fs.readFileSync(path.join(root, "agents", "main", ".inbox.jsonl"), "utf8")).toBe("")
    }))

  it.live("with PLANCKCLAW_AGENTS_HOLDING_FILES=0 an agent whose messages are answered holds no file descriptor", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const agents = yield* startHost(root, echoBrain().layer, { PLANCKCLAW_AGENTS_HOLDING_FILES: "0" })
      const ids = Array.from({ length: 10 }, (_, n) => `idle-${n}`)
      yield* Effect.forEach(ids, (id) => agents.send(id, { text: "one" }), { concurrency: "unbounded" })
      expect(openUnder(path.join(root, "agents"))).toEqual([])
      expect(yield* agents.send("idle-0", { text: "two" })).toEqual({ reply: "echo two", stored: true })
      expect(historyOf(root, "idle-0").map((line) => line.content)).toEqual(["one", "echo one", "two", "echo two"])
      expect(openUnder(path.join(root, "agents"))).toEqual([])
    }))
})
