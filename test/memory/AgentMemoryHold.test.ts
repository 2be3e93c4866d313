/**
 * An embedder's agent (Agent.layerWithMemory) holds its memory directory as
 * `planckclaw run` does: beside a live run on the same PLANCKCLAW_DIR it is
 * refused at its build, with the run's own refusal, instead of sharing the
 * inbox journal the run empties once its own messages are delivered (which
 * lost the embedder's accepted message). The run, which holds the directory
 * before building the same agent (Agent.layerOnHeldMemory), still starts.
 * In one process, it and an agent host's agent on one directory exclude
 * each other too (the host's instances share a directory only with one another).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import * as AgentHost from "../../src/hosts/serve/AgentHost.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import { MemoryInUse, runLockName } from "../../src/memory/MemoryHold.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { sandbox, tempDir } from "../support/Sandbox.js"

it.live("Agent.layerWithMemory beside a live `planckclaw run` on its directory is refused as a second run is; the run goes on", () =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("first"), AnthropicServer.text("second")))
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      CLAWS_DIR: path.join(Cli.REPO, "claws")
    }, "planckclaw-agent-beside-run-")
    const cli = yield* Cli.start(["run"], { cwd: box.dir, env: box.env })
    yield* cli.write("hello\n")
    expect(yield* cli.lines(1)).toEqual(["first"])
    expect(fs.existsSync(path.join(box.memory, runLockName))).toBe(true)

    const brain = yield* ScriptedBrain.make([])
    const refused = yield* Effect.flip(Layer.build(Agent.layerWithMemory.pipe(
      Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: box.memory })))
    )))
    expect(refused).toBeInstanceOf(MemoryInUse)
    expect(refused.message).toBe(
      `another planckclaw (pid ${cli.process.pid}: a run, or a serve that started this agent) is using the memory directory ${box.memory}`
    )
    // Refused before it opened anything: the run's journal and lock are its own still.
    expect(fs.readFileSync(path.join(box.memory, runLockName), "utf8")).toBe(`${cli.process.pid}\n`)

    yield* cli.write("again\n")
    expect(yield* cli.lines(2)).toEqual(["first", "second"])
    yield* cli.closeInput
    expect((yield* cli.done).code).toBe(0)
  })), 60_000)

it.effect("in one process, an agent host's agent and Agent.layerWithMemory on one directory: whichever comes second is refused", () =>
  Effect.gen(function*() {
    const root = yield* tempDir("planckclaw-agent-hold-host-")
    const provider = ConfigProvider.layer(ConfigProvider.fromEnvRecord({
      PLANCKCLAW_AGENTS_DIR: path.join(root, "agents"),
      PLANCKCLAW_DIR: path.join(root, "agents", "alice")
    }))
    const brain = yield* ScriptedBrain.make([ScriptedBrain.text("alice answers")])
    const ports = Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))
    const agents = Context.get(yield* Layer.build(AgentHost.layer.pipe(Layer.provide(ports), Layer.provide(provider))), AgentHost.AgentHost)
    const refused = yield* Effect.scoped(Effect.gen(function*() {
      yield* Layer.build(Agent.layerWithMemory.pipe(Layer.provide(ports), Layer.provide(provider)))
      return yield* Effect.flip(agents.send("alice", { text: "hi" }))
    }))
    expect(refused).toMatchObject({
      reason: "unavailable",
      message: `agent alice: another planckclaw process (pid ${process.pid}) is using ${path.join(root, "agents", "alice")}`
    })
    expect(yield* agents.send("alice", { text: "hi" })).toEqual({ reply: "alice answers", stored: true })
    // Started, the agent holds it: now Agent.layerWithMemory is the one refused.
    const second = yield* Effect.flip(Effect.scoped(Layer.build(Agent.layerWithMemory.pipe(Layer.provide(ports), Layer.provide(provider)))))
    expect(second).toBeInstanceOf(MemoryInUse)
  }))
