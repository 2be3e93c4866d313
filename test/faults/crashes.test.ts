/**
 * Crashes: `planckclaw run --bridge none` SIGKILLed at random points during
 * turns and during compaction, restarted, over many iterations; then the
 * memory must account for every exchange the user was answered for, exactly
 * once, and every message the agent had accepted must have been answered.
 * The PRNG is seeded (PLANCKCLAW_FAULT_SEED replays a campaign) and the seed
 * is printed.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Result, Option, Schedule } from "effect"
import { replay } from "../../src/memory/Inbox.js"
import {
  make as brainServer,
  delay,
  echo,
  type Handler,
  hang,
  isCompaction,
  lastUserText,
  listingSummary,
  type Reply,
  summaryItems,
  text,
  toolUse
} from "../support/AnthropicServer.js"
import { line } from "../support/Harness.js"
import { fifosLeft } from "../support/Pipes.js"
import { isRunning, type Sandbox } from "../support/Sandbox.js"
import { eventually, within } from "./Bounds.js"
import { prng, sandbox, SHIPPED_CLAWS, unparsableLines } from "./Campaign.js"
import { connectTo, isSentinel, listening, sendRaw, writeSentinel } from "./FifoClient.js"
import { planckclaw, strays } from "./Processes.js"

const seedFromEnv = Number.parseInt(process.env["PLANCKCLAW_FAULT_SEED"] ?? "", 10)
const SEED = Number.isSafeInteger(seedFromEnv) ? seedFromEnv : Math.floor(Math.random() * 2 ** 31)

/** What the campaign saw, across every run it started. */
interface Ledger {
  /** Every message sent, in order. */
  readonly sent: Array<string>
  /** How many times each message was answered (`re: TEXT` read on interact_out). */
  readonly answers: Map<string, number>
  /** Messages the agent had accepted (journaled) and not finished when it was killed. */
  readonly pendingAtKill: Set<string>
  /** Still owed an answer by the next run. */
  readonly owed: Set<string>
  readonly problems: Array<string>
}

const record = (ledger: Ledger, reply: { readonly channel: string; readonly text: string }) => {
  const asked = reply.text.startsWith("re: ") ? reply.text.slice(4) : undefined
  if (reply.channel !== "crash" || asked === undefined || !ledger.sent.includes(asked)) {
    ledger.problems.push(`unexpected reply ${JSON.stringify(reply)}`)
    return
  }
  ledger.answers.set(asked, (ledger.answers.get(asked) ?? 0) + 1)
  ledger.owed.delete(asked)
}

const memoryFile = (box: Sandbox, name: string) => {
  const file = path.join(box.memory, name)
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
}

/** Checks the memory files once the last run has ended; returns the broken invariants. */
const checkMemory = (box: Sandbox, ledger: Ledger): Array<string> => {
  const broken: Array<string> = [...ledger.problems]
  const history = memoryFile(box, "history.jsonl")
  const summary = memoryFile(box, "summary.md")
  broken.push(...unparsableLines(history).map((bad) => `history line does not parse: ${bad}`))
  broken.push(...unparsableLines(memoryFile(box, ".inbox.jsonl")).map((bad) => `journal line does not parse: ${bad}`))
  const entries = history.split("\n").filter((raw) => raw !== "").map((raw) => JSON.parse(raw) as Record<string, unknown>)
  const stored: Array<string> = []
  entries.forEach((entry, index) => {
    if (Object.keys(entry).join(",") !== "role,content") broken.push(`history line ${index + 1} has keys ${Object.keys(entry)}`)
    if (index % 2 === 0) {
      if (entry["role"] !== "user") broken.push(`history line ${index + 1} should be a user line`)
      stored.push(String(entry["content"]))
    } else if (entry["role"] !== "assistant" || entry["content"] !== `re: ${stored[stored.length - 1]}`) {
      broken.push(`history line ${index + 1} does not answer the line before it: ${JSON.stringify(entry)}`)
    }
  })
  const folded = summaryItems(summary)
  const count = new Map<string, number>()
  for (const text of [...stored, ...folded]) count.set(text, (count.get(text) ?? 0) + 1)
  for (const [text, times] of count) {
    if (times > 1) broken.push(`"${text}" is remembered ${times} times (history and summary together)`)
    if (!ledger.answers.has(text)) broken.push(`"${text}" is remembered but the user was never answered`)
  }
  for (const text of ledger.answers.keys()) {
    if (!count.has(text)) broken.push(`"${text}" was answered but is neither in history nor in the summary`)
  }
  for (const text of ledger.pendingAtKill) {
    if (!ledger.answers.has(text)) broken.push(`"${text}" was accepted before a kill and never answered`)
  }
  if (memoryFile(box, ".inbox.jsonl") !== "") broken.push("the inbox journal is not empty after the last run")
  for (const leftover of [".compaction-commit", ".history.jsonl.next", ".summary.md.next"]) {
    if (fs.existsSync(path.join(box.memory, leftover))) broken.push(`${leftover} left behind after a clean stop`)
  }
  // A lock a killed run held may stay until it is next taken; it must name no live process.
  for (const lock of [".planckclaw-run.lock", ".planckclaw-write.lock", ".planckclaw-compact.lock"]) {
    const owner = Number.parseInt(memoryFile(box, lock), 10)
    if (Number.isSafeInteger(owner) && isRunning(owner)) broken.push(`${lock} names pid ${owner}, which is running`)
  }
  return broken
}

interface Iteration {
  readonly settings: Record<string, string>
  readonly messages: number
  /** When to kill, once the messages are on their way. */
  readonly kill: Effect.Effect<void>
}

/**
 * One run: starts the agent, collects what the previous run owed, sends
 * `messages` new messages, kills it with SIGKILL when `kill` says, reads
 * what it had written, and notes what its journal held.
 */
const killedRun = (box: Sandbox, url: string, ledger: Ledger, label: string, iteration: Iteration, rand: () => number) =>
  Effect.scoped(Effect.gen(function*() {
    const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: url, ...iteration.settings }), {
      stdin: "ignore"
    })
    const client = yield* connectTo(proc, box.runDir)
    // What the previous run owed comes first, before anything new.
    while (ledger.owed.size > 0) record(ledger, yield* client.reply)
    const texts = Array.from({ length: iteration.messages }, (_, k) => `${label}-${k}`)
    yield* Effect.forkScoped(Effect.forEach(texts, (text) =>
      Effect.gen(function*() {
        ledger.sent.push(text)
        yield* client.send(text, "crash").pipe(Effect.orDie)
        yield* Effect.sleep(Math.floor(rand() * 120))
      }), { discard: true }))
    // The only reader from here on; it stops at the sentinel written after the kill.
    const drained = yield* Deferred.make<void>()
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(client.reply, (reply) =>
      isSentinel(reply) ? Deferred.succeed(drained, undefined) : Effect.sync(() => record(ledger, reply))
    )))
    yield* iteration.kill
    yield* proc.signal("SIGKILL")
    yield* proc.ended
    yield* writeSentinel(box.runDir)
    yield* Deferred.await(drained).pipe(within("the replies written before the kill"))
    // Whatever the journal still holds was accepted and must be answered by the next run.
    const pending = replay(memoryFile(box, ".inbox.jsonl"))
    for (const entry of pending) {
      ledger.pendingAtKill.add(entry.text)
      ledger.owed.add(entry.text)
    }
    const torn = [...unparsableLines(memoryFile(box, "history.jsonl")), ...unparsableLines(memoryFile(box, ".inbox.jsonl"))]
    if (torn.length > 0) ledger.problems.push(`${label}: lines that do not parse right after the kill: ${torn.join(" | ")}`)
    return pending.filter((entry) => Option.isSome(entry.reply)).length
  }))

/** The last run: collects what is owed, answers one more message, stops gracefully. */
const finalRun = (box: Sandbox, url: string, ledger: Ledger) =>
  Effect.scoped(Effect.gen(function*() {
    const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: url }), { stdin: "ignore" })
    const client = yield* connectTo(proc, box.runDir)
    while (ledger.owed.size > 0) record(ledger, yield* client.reply)
    ledger.sent.push("final")
    yield* client.send("final", "crash")
    while (!ledger.answers.has("final")) record(ledger, yield* client.reply)
    yield* proc.signal("SIGTERM")
    const end = yield* proc.ended
    expect(end, proc.stderr()).toEqual({ code: 0, signal: null })
    expect(fifosLeft(box.runDir)).toEqual([])
  }))

const summarise = (ledger: Ledger, box: Sandbox) => {
  const never = ledger.sent.filter((text) => !ledger.answers.has(text))
  const duplicates = [...ledger.answers].filter(([, times]) => times > 1).map(([text]) => text)
  return `sent ${ledger.sent.length}, answered ${ledger.answers.size}, accepted before a kill ${ledger.pendingAtKill.size}, ` +
    `answered twice (redelivered after a kill) ${duplicates.length}, never read off the pipe before a kill ${never.length}; ` +
    `history ${memoryFile(box, "history.jsonl").split("\n").length - 1} lines, summary ${summaryItems(memoryFile(box, "summary.md")).length} items`
}

/** Fills a FIFO that an agent holds open, as a bridge that stopped reading leaves it: further writes wait. */
const fillPipe = (file: string) => {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)
  const filler = Buffer.from(`filler\t${"x".repeat(4096 - 8)}\n`)
  while (Result.isSuccess(Result.try(() => fs.writeSync(fd, filler)))) {
    // Until the kernel says EAGAIN: the pipe is full.
  }
  fs.closeSync(fd)
  return true
}

const newLedger = (): Ledger => ({ sent: [], answers: new Map(), pendingAtKill: new Set(), owed: new Set(), problems: [] })

describe("faults: crashes", () => {
  it.live(`crash: SIGKILL at random points during turns, 8 runs (seed ${SEED}) → every answered exchange remembered once`, () =>
    Effect.gen(function*() {
      const rand = prng(SEED)
      console.log(`crash campaign (turns): seed ${SEED}`)
      const jittered = (reply: Reply): Reply => delay(Math.floor(rand() * 80), reply)
      // Some messages make the model call a shipped claw first, so turns have more steps to die in.
      const handler: Handler = (request) => {
        if (isCompaction(request)) return jittered(listingSummary(request))
        const asked = lastUserText(request.body)
        const last = request.body.messages[request.body.messages.length - 1]
        const wantsTool = asked.endsWith("-1") || asked.endsWith("-3")
        return jittered(
          wantsTool && typeof last?.content === "string"
            // No text before the call: every reply stays `re: TEXT`, which the ledger reads.
            ? toolUse([{ id: `tu_${asked}`, name: "get_time", input: {} }], null)
            : text(`re: ${asked}`)
        )
      }
      const box = yield* sandbox({ CLAWS_DIR: SHIPPED_CLAWS })
      const server = yield* brainServer(handler)
      const ledger = newLedger()
      let decidedBeforeKill = 0
      for (let run = 0; run < 8; run++) {
        const settings: Record<string, string> = run % 2 === 1 ? { HISTORY_MAX: "6", HISTORY_KEEP: "2" } : {}
        const killAfter = Math.floor(rand() * 1200)
        decidedBeforeKill += yield* killedRun(box, server.url, ledger, `t${run}`, {
          settings,
          messages: 1 + Math.floor(rand() * 5),
          kill: Effect.sleep(killAfter)
        }, rand)
      }
      yield* finalRun(box, server.url, ledger)
      console.log(`crash campaign (turns), seed ${SEED}: ${summarise(ledger, box)}; replies decided but undelivered at a kill: ${decidedBeforeKill}`)
      expect(checkMemory(box, ledger).join("\n")).toBe("")
      expect(ledger.answers.size).toBeGreaterThan(0)
      expect(yield* strays(box)).toEqual([])
    }), 300_000)

  it.live(`crash: SIGKILL at random points during compaction, 8 runs (seed ${SEED}) → no line lost or duplicated`, () =>
    Effect.gen(function*() {
      const rand = prng(SEED + 1)
      console.log(`crash campaign (compaction): seed ${SEED}`)
      let compactionArrived: (() => void) | undefined
      const handler: Handler = (request) => {
        if (isCompaction(request)) {
          compactionArrived?.()
          return delay(Math.floor(rand() * 150), listingSummary(request))
        }
        return echo(request, 0)
      }
      const box = yield* sandbox()
      const server = yield* brainServer(handler)
      const ledger = newLedger()
      for (let run = 0; run < 8; run++) {
        const killAfter = Math.floor(rand() * 250)
        // The last run is killed only once a compaction of its own committed: on a
        // loaded machine every random kill may come before one did, and the
        // campaign must still check a committed summary (the final run's
        // compaction is stopped by its SIGTERM). Killed after it, still at random.
        const summaryBefore = memoryFile(box, "summary.md")
        const committed = Effect.repeat(
          Effect.sync(() => memoryFile(box, "summary.md") !== summaryBefore),
          { until: (changed) => changed, schedule: Schedule.spaced("20 millis") }
        ).pipe(Effect.raceFirst(Effect.sleep("30 seconds")), Effect.asVoid)
        // Four messages always push history past HISTORY_MAX = 6: a compaction comes.
        const arrived = Effect.callback<void>((resume) => {
          compactionArrived = () => {
            compactionArrived = undefined
            resume(Effect.void)
          }
          return Effect.sync(() => void (compactionArrived = undefined))
        }).pipe(
          // Should the compaction have come before the trigger was set, kill anyway.
          Effect.raceFirst(Effect.sleep("8 seconds"))
        )
        const kill = Effect.andThen(run === 7 ? committed : arrived, Effect.sleep(killAfter))
        yield* killedRun(box, server.url, ledger, `c${run}`, {
          settings: { HISTORY_MAX: "6", HISTORY_KEEP: "2" },
          messages: 4,
          kill
        }, rand)
      }
      yield* finalRun(box, server.url, ledger)
      console.log(`crash campaign (compaction), seed ${SEED}: ${summarise(ledger, box)}`)
      expect(checkMemory(box, ledger).join("\n")).toBe("")
      expect(summaryItems(memoryFile(box, "summary.md")).length).toBeGreaterThan(0)
      expect(yield* strays(box)).toEqual([])
    }), 300_000)

  it.live(`crash: SIGKILL at random points during start-up, 6 times (seed ${SEED}) → the next start works, memory whole`, () =>
    Effect.gen(function*() {
      const rand = prng(SEED + 2)
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const history = line("user", "before") + line("assistant", "re: before")
      box.writeMemory("history.jsonl", history)
      for (let run = 0; run < 6; run++) {
        yield* Effect.scoped(Effect.gen(function*() {
          const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), { stdin: "ignore" })
          yield* Effect.sleep(Math.floor(rand() * 1500))
          yield* proc.signal("SIGKILL")
          yield* proc.ended
        }))
      }
      yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), { stdin: "ignore" })
        const client = yield* connectTo(proc, box.runDir)
        yield* client.send("after", "crash")
        expect(yield* client.reply).toEqual({ channel: "crash", text: "re: after" })
        yield* proc.signal("SIGTERM")
        expect((yield* proc.ended).code).toBe(0)
      }))
      expect(memoryFile(box, "history.jsonl")).toBe(history + line("user", "after") + line("assistant", "re: after"))
      // A runtime directory found at start (left by a killed run) stays, emptied;
      // if every kill came before one was made, the last run made and removed it.
      expect(fs.existsSync(box.runDir) ? fs.readdirSync(box.runDir) : []).toEqual([])
      expect(yield* strays(box)).toEqual([])
    }), 120_000)

  it.live("crash: SIGKILL while the brain thinks → the accepted message is answered after restart, once", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      let answering = false
      const server = yield* brainServer((request) => (answering ? echo(request, 0) : hang))
      yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_BRAIN_TIMEOUT: "600" }), { stdin: "ignore" })
        const client = yield* connectTo(proc, box.runDir)
        yield* client.send("are you there?", "crash")
        yield* within("1 request to the brain")(server.awaitRequests(1))
        yield* proc.signal("SIGKILL")
        yield* proc.ended
      }))
      expect(replay(memoryFile(box, ".inbox.jsonl")).map((entry) => entry.text)).toEqual(["are you there?"])
      answering = true
      yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), { stdin: "ignore" })
        const client = yield* connectTo(proc, box.runDir)
        expect(yield* client.reply).toEqual({ channel: "crash", text: "re: are you there?" })
        yield* client.send("and now?", "crash")
        expect(yield* client.reply).toEqual({ channel: "crash", text: "re: and now?" })
        yield* proc.signal("SIGTERM")
        expect((yield* proc.ended).code).toBe(0)
      }))
      expect(memoryFile(box, "history.jsonl")).toBe(
        line("user", "are you there?") + line("assistant", "re: are you there?") + line("user", "and now?") +
          line("assistant", "re: and now?")
      )
      expect(memoryFile(box, ".inbox.jsonl")).toBe("")
      expect(yield* strays(box)).toEqual([])
    }), 120_000)

  it.live("crash: SIGKILL after a reply was decided and stored, before the bridge took it → delivered after restart, stored once", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), { stdin: "ignore" })
        yield* listening(box.runDir)
        // A bridge that stopped reading: interact_out is full, so the reply cannot leave.
        // (Once the agent holds interact_out: before that, opening it for writing says ENXIO.)
        yield* eventually("interact_out filled", () => fillPipe(path.join(box.runDir, "interact_out")))
        yield* sendRaw(box.runDir, "crash\tremember me\n")
        const stored = line("user", "remember me") + line("assistant", "re: remember me")
        yield* eventually("the exchange in history", () => memoryFile(box, "history.jsonl") === stored ? true : undefined)
        yield* proc.signal("SIGKILL")
        yield* proc.ended
      }))
      const pending = replay(memoryFile(box, ".inbox.jsonl"))
      expect(pending.map((entry) => [entry.text, Option.getOrUndefined(entry.reply)])).toEqual([
        ["remember me", { text: "re: remember me", stored: true }]
      ])
      yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), { stdin: "ignore" })
        const client = yield* connectTo(proc, box.runDir)
        expect(yield* client.reply).toEqual({ channel: "crash", text: "re: remember me" })
        yield* proc.signal("SIGTERM")
        expect((yield* proc.ended).code).toBe(0)
      }))
      // Decided once: the brain was asked once, and history holds the exchange once.
      expect((yield* server.requests).length).toBe(1)
      expect(memoryFile(box, "history.jsonl")).toBe(line("user", "remember me") + line("assistant", "re: remember me"))
      expect(memoryFile(box, ".inbox.jsonl")).toBe("")
      expect(yield* strays(box)).toEqual([])
    }), 120_000)

  it.live("crash: SIGKILL while the brain summarises → history untouched, compaction done on the next turn", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      let summarising = false
      const server = yield* brainServer((request) =>
        isCompaction(request) ? (summarising ? listingSummary(request) : hang) : echo(request, 0)
      )
      const settings = { HISTORY_MAX: "6", HISTORY_KEEP: "2" }
      const initial = [1, 2, 3].map((n) => line("user", `old ${n}`) + line("assistant", `re: old ${n}`)).join("")
      box.writeMemory("history.jsonl", initial)
      yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url, ...settings }), { stdin: "ignore" })
        const client = yield* connectTo(proc, box.runDir)
        yield* client.send("fourth", "crash")
        expect(yield* client.reply).toEqual({ channel: "crash", text: "re: fourth" })
        yield* within("2 requests to the brain")(server.awaitRequests(2))
        yield* proc.signal("SIGKILL")
        yield* proc.ended
      }))
      expect(memoryFile(box, "history.jsonl")).toBe(initial + line("user", "fourth") + line("assistant", "re: fourth"))
      expect(memoryFile(box, "summary.md")).toBe("")
      summarising = true
      yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url, ...settings }), { stdin: "ignore" })
        const client = yield* connectTo(proc, box.runDir)
        yield* client.send("fifth", "crash")
        expect(yield* client.reply).toEqual({ channel: "crash", text: "re: fifth" })
        // Compaction runs after the reply is sent.
        yield* eventually("summary.md to be written", () => memoryFile(box, "summary.md") !== "" ? true : undefined)
        yield* proc.signal("SIGTERM")
        expect((yield* proc.ended).code).toBe(0)
      }))
      expect(summaryItems(memoryFile(box, "summary.md"))).toEqual(["old 1", "old 2", "old 3", "fourth"])
      expect(memoryFile(box, "history.jsonl")).toBe(line("user", "fifth") + line("assistant", "re: fifth"))
      expect(yield* strays(box)).toEqual([])
    }), 120_000)

  for (const stale of ["runtime directory", "memory directory"] as const) {
    it.live(`crash: a stale ${stale} lock naming a live process started after it (pids reused after a reboot) → the run starts anyway`, () =>
      Effect.gen(function*() {
        const box = yield* sandbox()
        const server = yield* brainServer(echo)
        // A process that came to life after the lock files were written: it cannot be their writer.
        const newcomer = yield* Effect.acquireRelease(
          Effect.sync(() => spawn("sleep", ["1000"], { detached: true, stdio: "ignore" })),
          (sleeper) => Effect.sync(() => void sleeper.kill("SIGKILL"))
        )
        const hourAgo = new Date(Date.now() - 3_600_000)
        const files = stale === "runtime directory"
          ? [path.join(box.runDir, "planckclaw.pid")]
          : [".planckclaw-run.lock", ".planckclaw-write.lock", ".planckclaw-compact.lock"].map((lock) => path.join(box.memory, lock))
        for (const file of files) {
          fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
          fs.writeFileSync(file, `${newcomer.pid}\n`, { mode: 0o600 })
          fs.utimesSync(file, hourAgo, hourAgo)
        }
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), {
          stdin: "ignore"
        })
        const client = yield* connectTo(proc, box.runDir)
        yield* client.send("hello after the reboot", "crash")
        expect(yield* client.reply).toEqual({ channel: "crash", text: "re: hello after the reboot" })
        yield* proc.signal("SIGTERM")
        expect((yield* proc.ended).code).toBe(0)
        expect(isRunning(newcomer.pid!)).toBe(true)
      }), 120_000)
  }

  it.live("crash: two runs on one memory directory → the second refuses with a clear error, the first goes on", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const first = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url }), { stdin: "ignore" })
      const client = yield* connectTo(first, box.runDir)
      const secondRun = box.path("run-2")
      const second = yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_RUN_DIR: secondRun }), { stdin: "ignore" })
        return { end: yield* proc.ended, stderr: proc.stderr() }
      }))
      expect(second.end.code).toBe(1)
      expect(second.stderr.trim()).toBe(
        `planckclaw: another planckclaw (pid ${first.pid}: a run, or a serve that started this agent) is using the memory directory ${box.memory}`
      )
      expect(fs.existsSync(secondRun)).toBe(false)
      // The same runtime directory, another memory: refused as well.
      const third = yield* Effect.scoped(Effect.gen(function*() {
        const proc = yield* planckclaw(box, ["run", "--bridge", "none"], box.envWith({ ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_DIR: box.path("memory-2") }), { stdin: "ignore" })
        return { end: yield* proc.ended, stderr: proc.stderr() }
      }))
      expect(third.end.code).toBe(1)
      expect(third.stderr).toContain(`is in use by a live run (pid ${first.pid})`)
      yield* client.send("still there?", "crash")
      expect(yield* client.reply).toEqual({ channel: "crash", text: "re: still there?" })
      yield* first.signal("SIGTERM")
      expect((yield* first.ended).code).toBe(0)
      expect(yield* strays(box)).toEqual([])
    }), 120_000)
})
