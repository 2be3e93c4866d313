/**
 * One composition of an agent (Agent.fromPorts), as serve's map of agents
 * uses it: a LayerMap keyed by agent, each agent built from its own ports.
 * The map memoizes layers by reference across its keys, so each call of
 * `fromPorts` must be a layer of its own: two agents started side by side
 * answer from their own memory.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, LayerMap, Option } from "effect"
import * as Agent from "../../src/agent/Agent.js"
import { AgentConfig, ParsedAgentConfig } from "../../src/config/AgentConfig.js"
import { Brain, systemText } from "../../src/ports/Brain.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as FoldStore from "../../src/memory/FoldStore.js"
import * as InboxStore from "../../src/memory/Inbox.js"
import * as Memory from "../../src/memory/Memory.js"
import { tempDir } from "../support/Sandbox.js"

// Says which soul it was given, so a reply names the agent whose memory was read.
const brain = Layer.succeed(Brain, {
  complete: (request) => Effect.succeed(ScriptedBrain.text(`soul: ${(systemText(request.system) ?? "").split("\n")[0] ?? ""}`))
})

/** The ports of the agent kept in `directory`: its file memory and journal, the shared brain (or `thinking`) and claws. */
const portsOf = (directory: string, thinking: Layer.Layer<Brain> = brain) =>
  Layer.unwrap(Effect.map(Memory.make(directory), (memory) =>
    Layer.mergeAll(
      Layer.succeed(Memory.Memory, memory),
      Layer.succeed(FoldStore.FoldStore, FoldStore.make(memory.memoryDir)),
      Layer.effect(InboxStore.Inbox, InboxStore.make(directory)),
      thinking,
      InMemoryClaws.layer([])
    )))

describe("Agent.fromPorts in a map of agents", () => {
  it.effect("builds each agent of a LayerMap from its own ports: two side by side answer from their own memory", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("planckclaw-fromports-")
      for (const id of ["ann", "bob"]) {
        fs.mkdirSync(path.join(root, id))
        fs.writeFileSync(path.join(root, id, "soul.md"), `I am ${id}.\n`)
      }
      const agents = yield* LayerMap.make(
        (id: string) => Agent.fromPorts().pipe(Layer.provideMerge(portsOf(path.join(root, id)))),
        { idleTimeToLive: "1 hour" }
      )
      const ask = (id: string, text: string) =>
        Effect.gen(function*() {
          const context = yield* agents.contextEffect(id)
          const pending = yield* Context.get(context, InboxStore.Inbox).accept({ channel: "me", text })
          const agent = Context.get(context, Agent.Agent)
          const outcome = yield* agent.respond(pending)
          yield* agent.delivered(pending, outcome)
          return Option.map(outcome, ({ reply, stored }) => ({ reply, stored }))
        })
      // Both started and held at once: the second must not be the first's build.
      const [ann, bob] = yield* Effect.all([ask("ann", "hello"), ask("bob", "hello")])
      expect(ann).toEqual(Option.some({ reply: "soul: I am ann.", stored: true }))
      expect(bob).toEqual(Option.some({ reply: "soul: I am bob.", stored: true }))
      for (const id of ["ann", "bob"]) {
        expect(fs.readFileSync(path.join(root, id, "history.jsonl"), "utf8")).toContain(`soul: I am ${id}.`)
      }
    })))

  it.effect("takes the settings its host parsed as they are: the agent and its compactor do not parse them again", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("planckclaw-fromports-")
      const asked: Array<number> = []
      const counting = Layer.succeed(Brain, {
        complete: (request) => Effect.sync(() => (asked.push(request.max_tokens), ScriptedBrain.text("ok")))
      })
      const parsed = { ...(yield* AgentConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({})))), maxTokens: 777 }
      const ports = portsOf(root, counting)
      // Settings that would not parse: given the parsed ones, nothing reads them.
      const context = yield* Layer.build(Agent.fromPorts().pipe(Layer.provideMerge(ports))).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ PLANCKCLAW_MAX_TOKENS: "many" })),
        Effect.provideService(ParsedAgentConfig, parsed)
      )
      const pending = yield* Context.get(context, InboxStore.Inbox).accept({ channel: "me", text: "hello" })
      const outcome = yield* Context.get(context, Agent.Agent).respond(pending)
      expect(Option.map(outcome, ({ reply }) => reply)).toEqual(Option.some("ok"))
      expect(asked).toEqual([777])
      // Without them, the same settings are parsed, and refused.
      const refused = yield* Effect.flip(Layer.build(Agent.fromPorts().pipe(Layer.provideMerge(ports))).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ PLANCKCLAW_MAX_TOKENS: "many" }))
      ))
      expect(String(refused)).toContain("PLANCKCLAW_MAX_TOKENS")
    })))
})
