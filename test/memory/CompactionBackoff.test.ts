/**
 * A compaction whose summary comes back unusable (a tool call, empty text,
 * more than summary.md may hold) is not asked again after every turn: after
 * a failure no new try until history has grown by HISTORY_KEEP / 2 lines,
 * the wait doubling with each failure in a row up to HISTORY_MAX lines; each
 * failure is logged once.
 * For `run` (the agent with Intake, as a run serves its bridge) and for
 * serve's agents (AgentHost): both use the one Compactor.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Queue } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import { Brain, type MessagesRequest, type MessagesResponse } from "../../src/ports/Brain.js"
import { text } from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as Intake from "../../src/agent/Intake.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import { Compactor } from "../../src/agent/Compactor.js"
import * as CompactionBackoff from "../../src/memory/CompactionBackoff.js"
import * as PromptFiles from "../../src/memory/PromptFiles.js"
import { COMPACTION_SYSTEM } from "../../src/agent/Prompt.js"
import { captureLogs } from "../support/LogCapture.js"
import { yieldToEventLoop } from "../support/TestClockWait.js"
import { tempDir } from "../support/Sandbox.js"
import { echoBrain, isCompaction, startHost, tempDir as hostDir } from "../hosts/serve/Kit.js"

const lastUserText = (request: MessagesRequest) => {
  const last = request.messages[request.messages.length - 1]
  return typeof last?.content === "string" ? last.content : ""
}

/** A tool call for an answer, with a word of text beside it, as models do. */
const toolCall: MessagesResponse = {
  ...text("Let me check."),
  content: [{ type: "text", text: "Let me check." }, { type: "tool_use", id: "t1", name: "search", input: {} }],
  stop_reason: "tool_use"
}

const SETTINGS = { HISTORY_MAX: "10", HISTORY_KEEP: "8" }
const TURNS = 40
/**
 * The turns after which a summary is asked, 1-based: history passes
 * HISTORY_MAX 10 at the 6th exchange (12 lines); then waits of 4 lines (2
 * exchanges), 8 (4), then 10 (5, HISTORY_MAX) each time.
 */
const EXPECTED = [6, 8, 12, 17, 22, 27, 32, 37]

describe("compaction backoff", () => {
  it("waits HISTORY_KEEP / 2 lines after a failure, doubling per failure in a row up to HISTORY_MAX; clears on success", () => {
    const backoff = CompactionBackoff.make(8, 10)
    expect(backoff.exchangeStored()).toBe(false)
    expect(backoff.failed()).toBe(4)
    expect([backoff.exchangeStored(), backoff.exchangeStored()]).toEqual([true, false])
    expect(backoff.failed()).toBe(8)
    expect(backoff.failed()).toBe(10)
    expect(backoff.failed()).toBe(10)
    backoff.succeeded()
    expect(backoff.exchangeStored()).toBe(false)
    expect(backoff.failed()).toBe(4)
    // HISTORY_KEEP 0: at least one exchange.
    expect(CompactionBackoff.make(0, 5).failed()).toBe(2)
  })

  const tooLarge = text("S".repeat(PromptFiles.PROMPT_FILE_MAX_BYTES))
  const said = {
    "a tool call": "with a tool call, not a summary",
    "empty text": "an empty summary",
    "a summary over summary.md's limit": "over its limit of 262144 bytes",
    "a summary the safety filter stopped": "the model's safety filter stopped the summary"
  }
  const refused = { ...text("The conversation so far: the user asked"), stop_reason: "refusal" as const }
  for (
    const [kind, unusable] of [
      ["a tool call", toolCall],
      ["empty text", text("  ")],
      ["a summary over summary.md's limit", tooLarge],
      ["a summary the safety filter stopped", refused]
    ] as const
  ) {
    it.effect(`run: summaries answered with ${kind} are asked after turns ${EXPECTED.join(", ")} of ${TURNS}, each failure logged once`, () =>
      Effect.gen(function*() {
        const logs = yield* captureLogs
        const directory = yield* tempDir()
        const asked: Array<number> = []
        let turn = 0
        const brain = Layer.succeed(Brain, {
          complete: (request) =>
            request.system === COMPACTION_SYSTEM
              ? Effect.sync(() => asked.push(turn)).pipe(Effect.as(unusable))
              : Effect.succeed(text(`re: ${lastUserText(request)}`))
        })
        const interact = yield* InMemoryInteract.make
        const provider = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([
          ["PLANCKCLAW_DIR", directory],
          ["PLANCKCLAW_PROMPT_CACHE", "0"],
          ...Object.entries(SETTINGS)
        ])), { preserveEmptyStrings: true })
        const layer = Agent.layerWithMemory.pipe(
          Layer.provide(Layer.merge(brain, InMemoryClaws.layer([]))),
          Layer.provideMerge(InMemoryInteract.layer(interact)),
          Layer.provide(ConfigProvider.layer(provider))
        )
        const context = yield* Layer.build(layer).pipe(Effect.provide(logs.layer))
        yield* Intake.run.pipe(Effect.provide(context), Effect.provide(logs.layer), Effect.forkScoped)
        const compactor = Context.get(context, Compactor)
        for (turn = 1; turn <= TURNS; turn++) {
          yield* interact.offer({ channel: "cli", text: `m${turn}` })
          expect((yield* Queue.take(interact.replies)).text).toBe(`re: m${turn}`)
          // The background try, if one started, ends before the next message: the count does not depend on timing.
          yield* compactor.settled
        }
        expect(asked).toEqual(EXPECTED)
        const warnings = logs.lines.filter((line) => line.includes("compaction did not run"))
        expect(warnings).toHaveLength(EXPECTED.length)
        expect(warnings[0]).toContain(said[kind])
        expect(warnings[0]).toContain("history is unchanged; not tried again until 4 more lines of history are stored")
        expect(warnings[2]).toContain("until 10 more lines")
        // Nothing was folded away under an unusable summary.
        expect(fs.existsSync(path.join(directory, "summary.md"))).toBe(false)
        expect(fs.readFileSync(path.join(directory, "history.jsonl"), "utf8").split("\n").filter(Boolean)).toHaveLength(2 * TURNS)
      }))
  }

  it.live(`serve: the same backoff for an agent of the host; /compact still runs and clears it`, () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      yield* Effect.gen(function*() {
        const root = hostDir()
        let broken = true
        let turn = 0
        const asked: Array<number> = []
        const brain = echoBrain((request) =>
          isCompaction(request) ? Effect.sync(() => asked.push(turn)).pipe(Effect.as(broken ? toolCall : text("a summary"))) : undefined
        )
        const agents = yield* startHost(root, brain.layer, SETTINGS)
        for (turn = 1; turn <= TURNS; turn++) {
          expect((yield* agents.send("patient", { text: `m${turn}` })).reply).toBe(`echo m${turn}`)
          // The background try takes its steps between turns of the event loop: all of them before the next message.
          for (let spin = 0; spin < 30; spin++) yield* yieldToEventLoop
        }
        expect(asked).toEqual(EXPECTED)
        expect(logs.lines.filter((line) => line.includes("compaction did not run"))).toHaveLength(EXPECTED.length)
        broken = false
        // Asked for, it runs whatever the backoff.
        expect((yield* agents.compact("patient")).compacted).toBe(true)
        expect(fs.readFileSync(path.join(root, "agents", "patient", "summary.md"), "utf8")).toBe("a summary\n")
      }).pipe(Effect.provide(logs.layer))
    }))
})
