/**
 * Process faults: the operator stops the agent mid-turn (SIGINT, SIGTERM;
 * SIGHUP is not handled yet: the runtime handles only these two), kills it outright (SIGKILL) while claws or
 * an external bridge run, and defects inside the agent loop. A stop is
 * clean (status 0, claws and bridges killed, FIFOs removed, nothing left
 * running); a kill leaves no process behind either; a defect costs one
 * apology, never the loop.
 *
 * The defect tests run the agent in this process (a defect cannot be
 * injected into the built command): the real agent and memory layers, with
 * a brain, claws or bridge that dies on cue.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Logger, Queue, Stream } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import { Brain, type BrainService, type MessagesRequest } from "../../src/ports/Brain.js"
import { Claws, type ClawsService } from "../../src/ports/Claws.js"
import * as Intake from "../../src/agent/Intake.js"
import { Interact, type InteractService, type OutboundMessage } from "../../src/ports/Interact.js"
import { APOLOGY } from "../../src/agent/Agent.js"
import {
  make as brainServer,
  echo,
  type Handler,
  hang,
  lastUserText,
  replies,
  text,
  toolUse
} from "../support/AnthropicServer.js"
import { line } from "../support/Harness.js"
import { fifosLeft } from "../support/Pipes.js"
import { tool } from "../support/Sandbox.js"
import { eventually, gone, pidIn, within } from "./Bounds.js"
import { fifoAgent, sandbox } from "./Campaign.js"
import { connectTo, listening, sendRaw } from "./FifoClient.js"
import { diagnosed, planckclaw, spawnHelperOf, strays, watchdogOf } from "./Processes.js"

const TIMEOUT = 120_000
/** A stop must finish within this: the claws' and bridges' grace plus start-up noise. A bound, not a measurement. */
const GRACE = "20 seconds"

/** The model calls `slow` for `work`, and answers everything else (and the tool's result) in text. */
const slowToolHandler: Handler = (request) => {
  const last = request.body.messages[request.body.messages.length - 1]
  return lastUserText(request.body) === "work" && typeof last?.content === "string"
    ? toolUse([{ id: "tu_slow", name: "slow", input: {} }])
    : text(`re: ${lastUserText(request.body)}`)
}

const slowClaw = `${tool("slow")}\necho $$ > "$D/slow.pid"\nsleep 1000 &\necho $! > "$D/slow-child.pid"\nsleep 1000\n`

describe("faults: process", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it.live(`process: ${signal} while a claw runs → exit 0, claw group killed, FIFOs removed; the message answered after restart`, () =>
      Effect.gen(function*() {
        const agent = yield* fifoAgent(slowToolHandler, { PLANCKCLAW_CLAW_TIMEOUT: "600" }, (box) => box.claw("slow.sh", slowClaw))
        yield* agent.client.send("work")
        const claw = yield* pidIn(agent.box.path("slow.pid"))
        const child = yield* pidIn(agent.box.path("slow-child.pid"))
        const { helper, watchdog } = yield* spawnHelperOf(agent.proc.pid)
        yield* agent.proc.signal(signal)
        expect(yield* within("a clean stop", GRACE)(agent.proc.ended)).toEqual({ code: 0, signal: null })
        yield* gone("the running claw", claw)
        yield* gone("the claw's child", child)
        yield* gone("planckclaw's spawn helper", helper)
        yield* gone("the spawn helper's watchdog", watchdog)
        expect(fifosLeft(agent.box.runDir)).toEqual([])
        expect(fs.existsSync(agent.box.runDir)).toBe(false)
        expect(yield* strays(agent.box)).toEqual([])

        // The message was accepted: the next run answers it, without the tool this time.
        fs.unlinkSync(agent.box.path("claws/slow.sh"))
        const again = yield* planckclaw(
          agent.box,
          ["run", "--bridge", "none"],
          agent.box.envWith({ ANTHROPIC_BASE_URL: agent.server.url }),
          { stdin: "ignore" }
        )
        const client = yield* connectTo(again, agent.box.runDir)
        // The model still calls the tool (unknown now); what it wrote before the call begins the reply.
        const reply = "Let me check.\n\nre: work"
        expect(yield* client.reply).toMatchObject({ channel: "cli", text: reply })
        yield* again.signal("SIGTERM")
        expect((yield* again.ended).code).toBe(0)
        expect(agent.box.memoryFile("history.jsonl")).toBe(line("user", "work") + line("assistant", reply))
        expect(yield* strays(agent.box)).toEqual([])
      }), TIMEOUT)
  }

  it.live("process: SIGTERM with replies unread in interact_out (no bridge reading) → kept, and sent first by the next run", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const env = box.envWith({ ANTHROPIC_BASE_URL: server.url })
      const proc = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      yield* listening(box.runDir)
      yield* sendRaw(box.runDir, "cli\tone\ncli\ttwo\n")
      const both = line("user", "one") + line("assistant", "re: one") + line("user", "two") + line("assistant", "re: two")
      yield* eventually("both exchanges stored", () => box.memoryFile("history.jsonl") === both ? true : undefined)
      yield* proc.signal("SIGTERM")
      expect(yield* within("a clean stop", GRACE)(proc.ended)).toEqual({ code: 0, signal: null })
      expect(box.memoryFile(".interact-out.unread")).toBe("cli\tre: one\ncli\tre: two\n")
      expect(proc.stderr()).toContain("2 reply line(s) were still unread")

      const again = yield* planckclaw(box, ["run", "--bridge", "none"], env, { stdin: "ignore" })
      const client = yield* connectTo(again, box.runDir)
      yield* client.send("three")
      expect([yield* client.reply, yield* client.reply, yield* client.reply].map((reply) => reply.text)).toEqual(["re: one", "re: two", "re: three"])
      yield* again.signal("SIGTERM")
      expect((yield* again.ended).code).toBe(0)
      expect(box.memoryFile(".interact-out.unread")).toBeUndefined()
      // Sent again, not answered again.
      expect(yield* server.turns).toHaveLength(3)
    }), TIMEOUT)

  it.live("process: SIGTERM while the brain hangs (terminal bridge) → exit 0 at once, nothing stored", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(replies(hang))
      const proc = yield* planckclaw(box, ["run"], box.envWith({ ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_BRAIN_TIMEOUT: "600" }))
      yield* proc.write("hello\n")
      yield* within("1 request to the brain")(server.awaitRequests(1))
      yield* proc.signal("SIGTERM")
      expect(yield* within("a clean stop", GRACE)(proc.ended)).toEqual({ code: 0, signal: null })
      expect(proc.stdout()).toBe("")
      expect(box.memoryFile("history.jsonl")).toBeUndefined()
      expect(fs.existsSync(box.runDir)).toBe(false)
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)

  it.live("process: SIGTERM with an external interact bridge → the bridge and its children stopped, nothing left", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const bridge = box.script(
        "bridge.sh",
        `echo $$ > "$D/bridge.pid"\nsleep 1000 &\necho $! > "$D/bridge-child.pid"\n` +
          `printf 'ext\\thello\\n' > "$PLANCKCLAW_INTERACT_IN"\n` +
          `while IFS= read -r reply; do printf '%s\\n' "$reply" >> "$D/replies"; done < "$PLANCKCLAW_INTERACT_OUT"\n`
      )
      const proc = yield* planckclaw(box, ["run", "--bridge", bridge], box.envWith({ ANTHROPIC_BASE_URL: server.url }), {
        stdin: "ignore"
      })
      const leader = yield* pidIn(box.path("bridge.pid"))
      const child = yield* pidIn(box.path("bridge-child.pid"))
      yield* diagnosed(proc)(
        eventually("the bridge to get its reply", () =>
          fs.readFileSync(box.path("replies"), "utf8") === "ext\tre: hello\n" ? true : undefined)
      )
      yield* proc.signal("SIGTERM")
      expect(yield* within("a clean stop", GRACE)(proc.ended)).toEqual({ code: 0, signal: null })
      yield* gone("the bridge", leader)
      yield* gone("the bridge's child", child)
      expect(fs.existsSync(box.runDir)).toBe(false)
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)

  it.live("process: SIGKILL while a claw runs → the claw's whole group goes too, no orphan", () =>
    Effect.gen(function*() {
      const agent = yield* fifoAgent(slowToolHandler, { PLANCKCLAW_CLAW_TIMEOUT: "600" }, (box) => box.claw("slow.sh", slowClaw))
      yield* agent.client.send("work")
      const claw = yield* pidIn(agent.box.path("slow.pid"))
      const child = yield* pidIn(agent.box.path("slow-child.pid"))
      const { helper, watchdog } = yield* spawnHelperOf(agent.proc.pid)
      yield* agent.proc.signal("SIGKILL")
      expect(yield* agent.proc.ended).toEqual({ code: null, signal: "SIGKILL" })
      // The helper reads end of file from the dead agent and kills the group itself.
      yield* gone("the running claw", claw)
      yield* gone("the claw's child", child)
      yield* gone("planckclaw's spawn helper", helper)
      yield* gone("the spawn helper's watchdog, its work done", watchdog)
      expect(yield* strays(agent.box)).toEqual([])
    }), TIMEOUT)

  it.live("process: SIGKILL with an external bridge running → the bridge's whole group goes too, no orphan", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const server = yield* brainServer(echo)
      const bridge = box.script(
        "bridge.sh",
        `echo $$ > "$D/bridge.pid"\nsleep 1000 &\necho $! > "$D/bridge-child.pid"\n` +
          `trap '' TERM\nwhile IFS= read -r reply; do :; done < "$PLANCKCLAW_INTERACT_OUT"\n`
      )
      const proc = yield* planckclaw(box, ["run", "--bridge", bridge], box.envWith({ ANTHROPIC_BASE_URL: server.url }), {
        stdin: "ignore"
      })
      const leader = yield* pidIn(box.path("bridge.pid"))
      const child = yield* pidIn(box.path("bridge-child.pid"))
      const watchdog = yield* watchdogOf(proc.pid)
      yield* proc.signal("SIGKILL")
      expect(yield* proc.ended).toEqual({ code: null, signal: "SIGKILL" })
      yield* gone("planckclaw's watchdog, its work done", watchdog)
      // Even one that ignores SIGTERM.
      yield* gone("the bridge", leader)
      yield* gone("the bridge's child", child)
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)
})

// ---------------------------------------------------------------------------
// Defects inside the agent loop, in this process

interface Captured {
  readonly errors: Array<string>
}

/** Runs the real agent (memory in a temp dir) with the given ports; replies land in a queue. */
const inProcessAgent = (options: {
  readonly brain: BrainService
  readonly claws?: ClawsService
  readonly interact: (replies: Queue.Queue<OutboundMessage>) => InteractService
}) =>
  Effect.gen(function*() {
    const box = yield* sandbox()
    const replies = yield* Queue.unbounded<OutboundMessage>()
    const captured: Captured = { errors: [] }
    const logger = Logger.make(({ cause, logLevel, message }) => {
      if (logLevel === "Error" || logLevel === "Fatal") {
        captured.errors.push(`${String(Array.isArray(message) ? message.join(" ") : message)} ${String(cause)}`)
      }
    })
    const layer = Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(
        Layer.succeed(Brain, options.brain),
        Layer.succeed(Claws, options.claws ?? { list: Effect.succeed({ tools: [], problems: [] }), call: () => Effect.die("unused") })
      )),
      Layer.provideMerge(Layer.succeed(Interact, options.interact(replies))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_DIR", box.memory]])), { preserveEmptyStrings: true })))
    )
    const context = yield* Layer.build(layer)
    yield* Intake.run.pipe(
      Effect.provide(context),
      Effect.provide(Logger.layer([logger])),
      Effect.forkScoped
    )
    return { box, replies, captured, take: within("a reply", "10 seconds")(Queue.take(replies)) }
  })

const echoBrain: BrainService = {
  complete: (request: MessagesRequest) => {
    const last = request.messages[request.messages.length - 1]!
    return Effect.succeed({
      content: [{ type: "text", text: `re: ${typeof last.content === "string" ? last.content : "tools"}` }],
      stop_reason: "end_turn"
    })
  }
}

/** An interact bridge fed from a queue, whose `send` runs `onSend` first. */
const queuedInteract = (
  inbound: Queue.Queue<{ channel: string; text: string }>,
  onSend: (message: OutboundMessage) => Effect.Effect<void> = () => Effect.void
) =>
(replies: Queue.Queue<OutboundMessage>): InteractService => ({
  // One message taken at a time: a defect loses only the message it broke on.
  messages: Stream.fromEffectRepeat(Queue.take(inbound)).pipe(
    Stream.mapEffect((message) => (message.text === "boom" ? Effect.die(new Error("the bridge broke on boom")) : Effect.succeed(message)))
  ),
  send: (message) => Effect.andThen(onSend(message), Queue.offer(replies, message))
})

describe("faults: process (defects in the agent loop)", () => {
  it.live("process: a defect inside a turn (the brain dies) → logged, that message gets the apology, the loop goes on", () =>
    Effect.gen(function*() {
      const inbound = yield* Queue.unbounded<{ channel: string; text: string }>()
      const agent = yield* inProcessAgent({
        brain: {
          complete: (request) =>
            request.messages.some((message) => message.content === "crash")
              ? Effect.die(new Error("a bug in the brain"))
              : echoBrain.complete(request)
        },
        interact: queuedInteract(inbound)
      })
      yield* Queue.offerAll(inbound, [{ channel: "a", text: "crash" }, { channel: "b", text: "fine" }])
      expect(yield* agent.take).toMatchObject({ channel: "a", text: APOLOGY })
      expect(yield* agent.take).toMatchObject({ channel: "b", text: "re: fine" })
      expect(agent.captured.errors.join("\n")).toContain("a bug in the brain")
      expect(agent.box.memoryFile("history.jsonl")).toBe(line("user", "fine") + line("assistant", "re: fine"))
    }), TIMEOUT)

  it.live("process: a defect inside a tool → logged, that message gets the apology, the loop goes on", () =>
    Effect.gen(function*() {
      const inbound = yield* Queue.unbounded<{ channel: string; text: string }>()
      let round = 0
      const agent = yield* inProcessAgent({
        brain: {
          complete: (request) =>
            request.messages.length === 1 && request.messages[0]!.content === "use the tool" && round++ === 0
              ? Effect.succeed({ content: [{ type: "tool_use", id: "tu_1", name: "buggy", input: {} }], stop_reason: "tool_use" })
              : echoBrain.complete(request)
        },
        claws: {
          list: Effect.succeed({ tools: [{ name: "buggy", description: "", input_schema: { type: "object" } }], problems: [] }),
          call: () => Effect.die(new Error("a bug in the tool"))
        },
        interact: queuedInteract(inbound)
      })
      yield* Queue.offerAll(inbound, [{ channel: "a", text: "use the tool" }, { channel: "a", text: "fine" }])
      const first = yield* agent.take
      // Either the model is told the tool crashed, or the turn is apologised for: never silence.
      expect([APOLOGY, "re: tools"]).toContain(first.text)
      expect(yield* agent.take).toMatchObject({ channel: "a", text: "re: fine" })
    }), TIMEOUT)

  it.live("process: a defect while delivering a reply and its apology → logged, the loop goes on for the next message", () =>
    Effect.gen(function*() {
      const inbound = yield* Queue.unbounded<{ channel: string; text: string }>()
      const agent = yield* inProcessAgent({
        brain: echoBrain,
        interact: queuedInteract(inbound, (message) =>
          message.channel === "cursed" ? Effect.die(new Error("the bridge cannot deliver to cursed")) : Effect.void)
      })
      yield* Queue.offerAll(inbound, [{ channel: "cursed", text: "one" }, { channel: "ok", text: "two" }])
      expect(yield* agent.take).toMatchObject({ channel: "ok", text: "re: two" })
      expect(agent.captured.errors.join("\n")).toContain("the bridge cannot deliver to cursed")
      // The exchange was decided and stored before delivery failed: the user may ask again, memory is whole.
      expect(agent.box.memoryFile("history.jsonl")).toBe(
        line("user", "one") + line("assistant", "re: one") + line("user", "two") + line("assistant", "re: two")
      )
      expect(agent.box.memoryFile(".inbox.jsonl")).toBe("")
    }), TIMEOUT)

  it.live("process: a defect while reading messages from the bridge → logged, reading restarts, later messages answered", () =>
    Effect.gen(function*() {
      const inbound = yield* Queue.unbounded<{ channel: string; text: string }>()
      const agent = yield* inProcessAgent({ brain: echoBrain, interact: queuedInteract(inbound) })
      yield* Queue.offerAll(inbound, [
        { channel: "a", text: "one" },
        { channel: "a", text: "boom" },
        { channel: "a", text: "two" }
      ])
      expect(yield* agent.take).toMatchObject({ channel: "a", text: "re: one" })
      expect(yield* agent.take).toMatchObject({ channel: "a", text: "re: two" })
      expect(agent.captured.errors.join("\n")).toContain("the bridge broke on boom")
      expect(agent.box.memoryFile("history.jsonl")).toBe(
        line("user", "one") + line("assistant", "re: one") + line("user", "two") + line("assistant", "re: two")
      )
    }), TIMEOUT)
})
