/**
 * Runs the real agent over in-memory transports: a scripted brain, a table
 * of tools, a queue for the user, and a real memory directory in a temp dir,
 * so tests can assert the exact requests and the exact files.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigProvider, Context, Effect, Fiber, Layer, Queue } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import type { InMemoryTool } from "../../src/claws/InMemoryClaws.js"
import * as Intake from "../../src/agent/Intake.js"
import type { OutboundMessage } from "../../src/ports/Interact.js"
import * as InMemoryInteract from "../../src/interact/InMemoryInteract.js"
import { Compactor } from "../../src/agent/Compactor.js"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as Memory from "../../src/memory/Memory.js"
import { tempDir } from "./Sandbox.js"

export interface HarnessOptions {
  readonly script: ReadonlyArray<ScriptedBrain.ScriptStep>
  readonly tools?: ReadonlyArray<InMemoryClaws.InMemoryTool>
  readonly settings?: Record<string, string>
  readonly soul?: string
  readonly summary?: string
  readonly history?: string
  /** A leftover inbox journal, as a killed run leaves it. */
  readonly inbox?: string
}

export const harness = (options: HarnessOptions) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    if (options.soul !== undefined) fs.writeFileSync(path.join(directory, "soul.md"), options.soul)
    if (options.summary !== undefined) fs.writeFileSync(path.join(directory, "summary.md"), options.summary)
    if (options.history !== undefined) fs.writeFileSync(path.join(directory, "history.jsonl"), options.history)
    if (options.inbox !== undefined) fs.writeFileSync(path.join(directory, ".inbox.jsonl"), options.inbox)
    const brain = yield* ScriptedBrain.make(options.script)
    const interact = yield* InMemoryInteract.make
    const provider = ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries({ PLANCKCLAW_DIR: directory, PLANCKCLAW_MODEL: "test-model", ...options.settings }))), { preserveEmptyStrings: true })
    const layer = Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer(options.tools ?? []))),
      Layer.provideMerge(InMemoryInteract.layer(interact)),
      Layer.provide(ConfigProvider.layer(provider))
    )
    const context = yield* Layer.build(layer)
    const serving = yield* Intake.run.pipe(Effect.provide(context), Effect.forkScoped)

    const read = (name: string) => {
      const file = path.join(directory, name)
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined
    }
    return {
      directory,
      requests: brain.requests,
      /** Sends a message and waits for its reply. */
      say: (text: string, channel = "cli") =>
        interact.offer({ channel, text }).pipe(Effect.andThen(Queue.take(interact.replies))),
      offer: (text: string, channel = "cli") => interact.offer({ channel, text }),
      reply: Queue.take(interact.replies) as Effect.Effect<OutboundMessage>,
      end: interact.end,
      /** Waits for the agent's background compaction in flight, if any. */
      settled: Context.get(context, Compactor).settled,
      /** Ends the input and waits until the agent has finished everything, compaction included (it runs in the background). */
      finish: interact.end.pipe(
        Effect.andThen(Fiber.join(serving)),
        Effect.andThen(Context.get(context, Compactor).settled)
      ),
      read,
      write: (name: string, content: string) => Effect.sync(() => fs.writeFileSync(path.join(directory, name), content))
    }
  })

/** A tool without parameters that answers the same time every call. */
export const timeTool: InMemoryTool = {
  definition: { name: "get_time", description: "Current time", input_schema: { type: "object", properties: {} } },
  run: () => Effect.succeed({ content: "1700000000", isError: false })
}

/** A tool that rolls a 4 on a die of the sides it is given. */
export const diceTool: InMemoryTool = {
  definition: {
    name: "roll_dice",
    description: "Roll dice",
    input_schema: { type: "object", properties: { sides: { type: "integer" } } }
  },
  run: (input) => Effect.succeed({ content: `rolled d${(input as { sides: number }).sides}: 4`, isError: false })
}

/**
 * A memory store on a fresh temp dir holding `files`, with the compaction's
 * side of the same store (sharing its lock).
 */
export const memoryStore = (files: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const directory = yield* tempDir()
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(directory, name), content)
    const memory = yield* Memory.make(directory)
    const folds = FoldStore.make(memory.memoryDir)
    return { directory, memory, folds }
  })

/** A history line exactly as the agent writes it. */
export const line = (role: "user" | "assistant", content: string) => `${JSON.stringify({ role, content })}\n`
