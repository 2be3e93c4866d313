/**
 * The compaction a turn makes due runs in the background: the next message
 * is answered while the compaction's brain request is still held, nothing
 * appended meanwhile is lost, and the agent's scope decides its end (a
 * normal close waits for it, an interrupted one stops it and leaves memory
 * as it was). The brain here answers a turn at once and holds a summary
 * request on a latch, so no test waits on time.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Effect, Exit, Fiber, Layer, Queue, Scope } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import { Brain, type MessagesRequest } from "../../src/ports/Brain.js"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as Intake from "../../src/agent/Intake.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import { Compactor } from "../../src/agent/Compactor.js"
import { COMPACTION_SYSTEM } from "../../src/agent/Prompt.js"
import { line } from "../support/Harness.js"
import { tempDir } from "../support/Sandbox.js"

const lastUserText = (request: MessagesRequest) => {
  const last = request.messages[request.messages.length - 1]
  return typeof last?.content === "string" ? last.content : ""
}

/** An agent on a temp memory directory whose summary requests wait for `release`; built in `scope`. */
const heldAgent = (scope: Scope.Scope) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    const old = [line("user", "o1"), line("assistant", "r1"), line("user", "o2"), line("assistant", "r2")]
    fs.writeFileSync(path.join(directory, "history.jsonl"), old.join(""))
    const summaryAsked = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    // A turn for the message "held" waits for `turnRelease`.
    const turnHeld = yield* Deferred.make<void>()
    const turnRelease = yield* Deferred.make<void>()
    // What each summary request was given to fold, in order.
    const folded: Array<string> = []
    const brain = Layer.succeed(Brain, {
      complete: (request) =>
        request.system === COMPACTION_SYSTEM
          ? Effect.sync(() => folded.push(JSON.stringify(request.messages))).pipe(
            Effect.andThen(Deferred.succeed(summaryAsked, undefined)),
            Effect.andThen(Deferred.await(release)),
            Effect.as(text("Folded."))
          )
          : lastUserText(request) === "held"
          ? Deferred.succeed(turnHeld, undefined).pipe(Effect.andThen(Deferred.await(turnRelease)), Effect.as(text("re: held")))
          : Effect.succeed(text(`re: ${lastUserText(request)}`))
    })
    const interact = yield* InMemoryInteract.make
    const provider = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([
      ["PLANCKCLAW_DIR", directory],
      ["PLANCKCLAW_MODEL", "test-model"],
      ["PLANCKCLAW_PROMPT_CACHE", "0"],
      ["HISTORY_MAX", "4"],
      ["HISTORY_KEEP", "2"]
    ])), { preserveEmptyStrings: true })
    const layer = Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(brain, InMemoryClaws.layer([]))),
      Layer.provideMerge(InMemoryInteract.layer(interact)),
      Layer.provide(ConfigProvider.layer(provider))
    )
    const context = yield* Layer.buildWithScope(layer, scope)
    const serving = yield* Intake.run.pipe(Effect.provide(context), Effect.forkIn(scope))
    const read = (name: string) => {
      const file = path.join(directory, name)
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined
    }
    return {
      directory,
      old,
      folded,
      read,
      summaryAsked,
      release,
      turnHeld,
      turnRelease,
      serving,
      interact,
      compactor: Context.get(context, Compactor),
      say: (message: string) =>
        interact.offer({ channel: "cli", text: message }).pipe(Effect.andThen(Queue.take(interact.replies)))
    }
  })

describe("background compaction", () => {
  it.effect("the next message is answered while the compaction's brain request is held; then both commit, and what came meanwhile is compacted at once", () =>
    Effect.gen(function*() {
      const h = yield* heldAgent(yield* Effect.scope)
      expect((yield* h.say("u1")).text).toBe("re: u1")
      // Six lines > HISTORY_MAX 4: the compaction started and now waits on the brain.
      yield* Deferred.await(h.summaryAsked)
      // Inline, this message would wait for the summary (held forever here).
      expect((yield* h.say("u2")).text).toBe("re: u2")
      expect((yield* h.say("u3")).text).toBe("re: u3")
      expect(h.read("summary.md")).toBeUndefined()
      expect(h.read("history.jsonl")).toBe(
        h.old.join("") + line("user", "u1") + line("assistant", "re: u1") + line("user", "u2") +
          line("assistant", "re: u2") + line("user", "u3") + line("assistant", "re: u3")
      )

      yield* Deferred.succeed(h.release, undefined)
      yield* h.compactor.settled
      // The first fold took what was older than the kept tail when planned; the lines appended meanwhile
      // were kept, once: six, over HISTORY_MAX 4, so a second compaction folded them down to HISTORY_KEEP
      // without waiting for another message.
      expect(h.folded).toHaveLength(2)
      expect(h.folded[0]).toContain("o1")
      expect(h.folded[0]).not.toContain("u1")
      expect(h.folded[1]).toContain("re: u1")
      expect(h.folded[1]).toContain("re: u2")
      expect(h.folded[1]).not.toContain("u3")
      expect(h.read("summary.md")).toBe("Folded.\n")
      expect(h.read("history.jsonl")).toBe(line("user", "u3") + line("assistant", "re: u3"))
    }))

  it.effect("the compaction takes its steps between turns: it does not go on while a turn is in flight", () =>
    Effect.gen(function*() {
      const h = yield* heldAgent(yield* Effect.scope)
      // Both at once: the compaction u1 makes due starts as u1 ends, and "held" is taken right after.
      yield* h.interact.offer({ channel: "cli", text: "u1" })
      yield* h.interact.offer({ channel: "cli", text: "held" })
      expect((yield* Queue.take(h.interact.replies)).text).toBe("re: u1")
      yield* Deferred.await(h.turnHeld)
      // Many event-loop turns go by, each enough for one of the compaction's steps; it needs several before its summary request.
      for (let i = 0; i < 50; i++) yield* Effect.promise(() => new Promise((done) => setImmediate(done)))
      expect(yield* Deferred.isDone(h.summaryAsked)).toBe(false)
      yield* Deferred.succeed(h.turnRelease, undefined)
      expect((yield* Queue.take(h.interact.replies)).text).toBe("re: held")
      yield* Deferred.await(h.summaryAsked)
      yield* Deferred.succeed(h.release, undefined)
      yield* h.compactor.settled
      expect(h.read("summary.md")).toBe("Folded.\n")
    }))

  it.effect("/compact waits for the compaction in flight instead of answering that one is running", () =>
    Effect.gen(function*() {
      const h = yield* heldAgent(yield* Effect.scope)
      yield* h.say("u1")
      yield* Deferred.await(h.summaryAsked)
      const answer = yield* Effect.forkChild(h.say("/compact"))
      yield* Deferred.succeed(h.release, undefined)
      const reply = (yield* Fiber.join(answer)).text
      expect(reply).not.toContain("already running")
      expect(h.read("summary.md")).toBe("Folded.\n")
    }))

  it.effect("the end of input, then a normal close of the agent's scope, waits for the compaction (a piped run's end)", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const h = yield* heldAgent(scope)
      yield* h.say("u1")
      yield* Deferred.await(h.summaryAsked)
      yield* h.interact.end
      yield* Fiber.join(h.serving)
      // The loop ended; the compaction still waits on the brain. Closing waits for it.
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* Deferred.succeed(h.release, undefined)
      yield* Fiber.join(closing)
      expect(h.read("summary.md")).toBe("Folded.\n")
      expect(h.read("history.jsonl")).toBe(line("user", "u1") + line("assistant", "re: u1"))
    }))

  it.effect("an interrupted close (shutdown) stops the compaction and leaves memory as it was", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const h = yield* heldAgent(scope)
      yield* h.say("u1")
      yield* Deferred.await(h.summaryAsked)
      yield* Scope.close(scope, Exit.interrupt())
      expect(h.read("summary.md")).toBeUndefined()
      expect(h.read("history.jsonl")).toBe(h.old.join("") + line("user", "u1") + line("assistant", "re: u1"))
      // Its lock went with it: the next compaction (of this or another process) is not refused.
      expect(fs.existsSync(path.join(h.directory, ".planckclaw-compact.lock"))).toBe(false)
    }))

  it.effect("a normal close run by an interrupted fiber (serve's agents on SIGTERM) stops the compaction instead of waiting", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const h = yield* heldAgent(scope)
      yield* h.say("u1")
      yield* Deferred.await(h.summaryAsked)
      // As serve's RcMap closes its agents when the host is interrupted: Exit.void, from an interrupted fiber.
      const host = yield* Effect.forkChild(Effect.onInterrupt(Effect.never, () => Scope.close(scope, Exit.void)))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(host)
      // Ended, not left waiting on the brain.
      yield* h.compactor.settled
      expect(h.read("summary.md")).toBeUndefined()
      expect(h.read("history.jsonl")).toBe(h.old.join("") + line("user", "u1") + line("assistant", "re: u1"))
      expect(fs.existsSync(path.join(h.directory, ".planckclaw-compact.lock"))).toBe(false)
    }))
})
