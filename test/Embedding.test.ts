/**
 * Host programs embedding the agent through the package's public entry
 * point, with their own in-memory transports: the example of
 * docs/embedding.md, read from the page and run as written, a host that
 * also runs a tool, one that starts a second agent on a directory in use,
 * and one hosting many agents.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Effect, Exit, Fiber, Layer, Queue, Scope } from "effect"
import { Agent, AgentHost, Brain, Inbox, InMemoryClaws, InMemoryInteract, MemoryHold, ScriptedBrain } from "../src/index.js"
import { tempDir } from "./support/Sandbox.js"

/** The first ```ts block of docs/embedding.md. */
const readmeExample = (): string => {
  const page = fs.readFileSync(path.join(import.meta.dirname, "..", "docs", "embedding.md"), "utf8")
  const block = /```ts\n([\s\S]*?)```/.exec(page)
  if (block === null) throw new Error("docs/embedding.md has no ts block")
  return block[1]!
}

it.effect("the embedding example of docs/embedding.md runs as written", () =>
  Effect.gen(function*() {
    const source = readmeExample()
    expect(source).toContain(`from "planckclaw"`)
    // Written next to this test, so it is compiled like it; only the package name changes.
    const file = path.join(import.meta.dirname, `.readme-embedding-${process.pid}.generated.ts`)
    yield* Effect.acquireRelease(
      Effect.sync(() => fs.writeFileSync(file, source.replaceAll(`from "planckclaw"`, `from "../src/index.js"`))),
      () => Effect.sync(() => fs.rmSync(file, { force: true }))
    )
    const example = yield* Effect.promise(() => import(file) as Promise<{ program: (dir: string) => Effect.Effect<unknown, unknown, import("effect/Scope").Scope> }>)
    const memoryDir = yield* tempDir("planckclaw-readme-")
    const reply = yield* example.program(memoryDir)
    expect(reply).toMatchObject({ channel: "me", text: "Hello from the agent" })
  }))

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
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([["PLANCKCLAW_DIR", memoryDir]])), { preserveEmptyStrings: true })))
    )
    yield* Agent.serve.pipe(
      Effect.provide(Layer.merge(agent, InMemoryInteract.layer(users))),
      Effect.forkScoped
    )

    yield* users.offer({ channel: "host-channel", text: "say hello" })
    yield* users.end
    return yield* Queue.take(users.replies)
  })

it.effect("runs the agent inside a host Effect program with in-memory transports", () =>
  Effect.gen(function*() {
    const memoryDir = yield* tempDir("planckclaw-embed-")
    const reply = yield* hostProgram(memoryDir)
    expect(reply).toMatchObject({ channel: "host-channel", text: "The tool said: hello, host" })
    expect(fs.readFileSync(path.join(memoryDir, "history.jsonl"), "utf8")).toBe(
      "{\"role\":\"user\",\"content\":\"say hello\"}\n{\"role\":\"assistant\",\"content\":\"The tool said: hello, host\"}\n"
    )
  }))

it.effect("a second agent on a memory directory in use is refused with MemoryHold.MemoryInUse; released, the first's accepted message is recovered at the next start", () =>
  Effect.gen(function*() {
    const memoryDir = yield* tempDir("planckclaw-embed-held-")
    const agentOn = (brain: ScriptedBrain.ScriptedBrain) =>
      Agent.layerWithMemory.pipe(
        Layer.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ PLANCKCLAW_DIR: memoryDir })))
      )
    // The first agent accepts a message and is asked about it; its reply never comes.
    const asked = yield* Deferred.make<void>()
    const first = yield* Scope.make()
    const users = yield* InMemoryInteract.make
    const built = yield* Layer.buildWithScope(agentOn(yield* ScriptedBrain.make([() => Effect.andThen(Deferred.succeed(asked, undefined), Effect.never)])), first)
    const serving = yield* Agent.serve.pipe(
      Effect.provide(Layer.merge(Layer.succeedContext(built), InMemoryInteract.layer(users))),
      Effect.forkIn(first)
    )
    yield* users.offer({ channel: "me", text: "accepted, not yet answered" })
    yield* Deferred.await(asked)

    // A second agent on the same directory, in the same process: refused, a tag the host can branch on.
    const second = yield* Effect.flip(Effect.scoped(Layer.build(agentOn(yield* ScriptedBrain.make([])))))
    expect(second).toBeInstanceOf(MemoryHold.MemoryInUse)
    const branched = yield* Effect.scoped(Layer.build(agentOn(yield* ScriptedBrain.make([])))).pipe(
      Effect.as("started"),
      Effect.catchTag("MemoryInUse", (error) => Effect.succeed(`in use by pid ${error.pid}`))
    )
    expect(branched).toBe(`in use by pid ${process.pid}`)

    // The first stops before its reply; its directory is let go with its scope, and the message waits in the journal.
    yield* Fiber.interrupt(serving)
    yield* Scope.close(first, Exit.void)
    const next = yield* Effect.scoped(Effect.map(Layer.build(agentOn(yield* ScriptedBrain.make([]))), (context) =>
      Context.get(context, Inbox.Inbox).recovered.map((pending) => pending.text)))
    expect(next).toEqual(["accepted, not yet answered"])
  }))

it.effect("hosts many agents without the command line: send to an agent by id, list them, compact one", () =>
  Effect.gen(function*() {
    const root = yield* tempDir("planckclaw-embed-host-")
    // A host's own brain: summaries for compactions, an echo for turns.
    const brain = Layer.succeed(Brain.Brain, {
      complete: (request) => {
        const last = request.messages[request.messages.length - 1]!
        const text = typeof last.content === "string" ? last.content : ""
        return Effect.succeed(ScriptedBrain.text(text.startsWith("EXISTING SUMMARY:") ? "they said hello" : `echo ${text}`))
      }
    })
    const host = AgentHost.layer.pipe(
      Layer.provide(Layer.merge(brain, InMemoryClaws.layer([]))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(Object.fromEntries(new Map([
        ["PLANCKCLAW_AGENTS_DIR", path.join(root, "agents")],
        ["PLANCKCLAW_DIR", path.join(root, "memory")],
        // compact keeps the last line and folds the rest.
        ["HISTORY_KEEP", "1"]
      ])), { preserveEmptyStrings: true })))
    )
    // Built in the test's scope: the agents run until it closes.
    const agents = Context.get(yield* Layer.build(host), AgentHost.AgentHost)
    const replies = yield* Effect.all([
      agents.send("alice", { text: "hello", channel: "host-app" }),
      agents.send("bob", { text: "hi there" })
    ], { concurrency: "unbounded" })
    expect(replies).toEqual([{ reply: "echo hello", stored: true }, { reply: "echo hi there", stored: true }])
    expect(yield* agents.send("alice", { text: "again" })).toEqual({ reply: "echo again", stored: true })
    // The service's results, typed by the names the entry exports.
    const listed: AgentHost.AgentList = yield* agents.list({ limit: 100 })
    expect(listed.agents.map((agent) => [agent.id, agent.historyLines, agent.state])).toEqual([["alice", 4, "running"], ["bob", 2, "running"]])
    expect(listed.next).toBeNull()
    expect(agents.history).toBeDefined()
    const page: AgentHost.HistoryPage = yield* agents.history!("alice", { limit: 2 })
    expect(page.entries.map(({ content, role }) => `${role}: ${content}`)).toEqual(["assistant: echo again", "user: again"])
    expect(page.next).not.toBeNull()
    const compacted = yield* agents.compact("alice")
    expect(compacted).toMatchObject({ compacted: true, summarised: 3, kept: 1 })
    expect(fs.readFileSync(path.join(root, "agents", "alice", "summary.md"), "utf8")).toContain("they said hello")
    const refused = yield* Effect.flip(agents.send("../escape", { text: "x" }))
    expect(refused.reason).toBe("bad-id")
  }))
