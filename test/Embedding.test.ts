/**
 * A tiny host program embedding the agent through the package's public
 * entry point, with its own in-memory transports, exactly as the README
 * shows it.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Queue } from "effect"
import { Agent, InMemoryClaws, InMemoryInteract, ScriptedBrain } from "../src/index.js"

const hostProgram = (memoryDir: string) =>
  Effect.gen(function*() {
    // The host's own transports: a queue for users, a brain it controls, one tool.
    const users = yield* InMemoryInteract.make
    const brain = yield* ScriptedBrain.make([
      ScriptedBrain.toolUse([{ id: "t1", name: "greet", input: { who: "host" } }]),
      ScriptedBrain.text("The tool said: hello, host")
    ])
    const claws = InMemoryClaws.layer([{
      definition: { name: "greet", description: "Greets", input_schema: { type: "object", properties: {} } },
      run: (input) => Effect.succeed({ content: `hello, ${(input as { who: string }).who}`, isError: false })
    }])

    const agent = Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), claws)),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["PLANCKCLAW_DIR", memoryDir]]))))
    )
    yield* Agent.serve.pipe(
      Effect.provide(Layer.merge(agent, InMemoryInteract.layer(users))),
      Effect.forkScoped
    )

    yield* users.offer({ channel: "host-channel", text: "say hello" })
    yield* users.end
    return yield* Queue.take(users.replies)
  })

it.scoped("runs the agent inside a host Effect program with in-memory transports", () =>
  Effect.gen(function*() {
    const memoryDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-embed-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const reply = yield* hostProgram(memoryDir)
    expect(reply).toEqual({ channel: "host-channel", text: "The tool said: hello, host" })
    expect(fs.readFileSync(path.join(memoryDir, "history.jsonl"), "utf8")).toBe(
      "{\"role\":\"user\",\"content\":\"say hello\"}\n{\"role\":\"assistant\",\"content\":\"The tool said: hello, host\"}\n"
    )
  }))
