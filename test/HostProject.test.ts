/**
 * A host project on the Effect 4.1 line, as a user would make one: it
 * installs this checkout's packed tarball (npm pack, after npm run build)
 * beside effect, @effect/platform-node, @effect/vitest, vitest (and vite),
 * typescript and @types/node at this lock file's versions, gets one copy of effect,
 * typechecks and runs the embedding example (the first ```ts block under
 * "## Embedding", in README.md or docs/embedding.md) and a TestClock test of
 * its own, typechecks and loads docs/embedding.md's built-in adapters (no
 * `redis` installed, as with legacy-peer-deps), and writes the types of
 * what it assembles with the package's names alone. The install's packages
 * come from a registry on loopback serving this lock file's
 * (test/support/LoopbackRegistry.ts), with npm's proxy a closed loopback
 * port, so that any attempt to reach another address fails the test.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as LoopbackRegistry from "./support/LoopbackRegistry.js"

const root = path.join(import.meta.dirname, "..")
const host = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-host-"))
const timings: Record<string, number> = {}

/** npm as a user runs it: without the npm_config_* this repository's npm hands its scripts (its .npmrc). */
const userEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key))),
  ...extra
})

/** Runs a command in the host project; its stdout (it throws with stderr when the command fails). */
const sh = (what: string, command: string, args: ReadonlyArray<string>, cwd = host) => {
  const started = Date.now()
  const result = child.spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    // Offline: nothing after the install asks a registry.
    env: userEnv({ npm_config_offline: "true", npm_config_proxy: LoopbackRegistry.closedPort, npm_config_https_proxy: LoopbackRegistry.closedPort })
  })
  timings[what] = Date.now() - started
  if (result.status !== 0) throw new Error(`${what}: ${command} ${args.join(" ")} exited ${result.status}\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

/** The first ```ts block under "## Embedding": README.md's, or docs/embedding.md's (its first) once the README points there. */
const embeddingExample = (): string => {
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
  const text = readme.includes("\n## Embedding\n") ? readme : fs.readFileSync(path.join(root, "docs", "embedding.md"), "utf8")
  const heading = text.indexOf("## Embedding\n")
  const section = heading === -1 ? text : text.slice(heading)
  const block = /```ts\n([\s\S]*?)```/.exec(section)
  if (block === null) throw new Error("no ts block under ## Embedding")
  return block[1]!
}

/** docs/embedding.md's block of the built-in adapters: the one importing @effect/platform-node. */
const adaptersExample = (): string => {
  const page = fs.readFileSync(path.join(root, "docs", "embedding.md"), "utf8")
  const block = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!).find((text) => text.includes("@effect/platform-node"))
  if (block === undefined) throw new Error("docs/embedding.md has no ts block importing @effect/platform-node")
  return block
}

const lockVersion = (name: string): string => {
  const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string }>
  }
  const version = lock.packages[`node_modules/${name}`]?.version
  if (version === undefined) throw new Error(`${name} is not in package-lock.json`)
  return version
}

/** The host's own test: a brain that takes 30 s, on the TestClock; nothing waits 30 real seconds. */
const hostTest = `import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AgentHost, Brain, InMemoryClaws, ScriptedBrain } from "planckclaw"

it.effect("a slow brain's reply comes when the test clock reaches it", () =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "host-agents-"))
    const asked = yield* Deferred.make<void>()
    const slowBrain = Layer.succeed(Brain.Brain, {
      complete: () =>
        Deferred.succeed(asked, undefined).pipe(
          Effect.andThen(Effect.sleep("30 seconds")),
          Effect.as(ScriptedBrain.text("slow hello"))
        )
    })
    const host = AgentHost.layer.pipe(
      Layer.provide(Layer.merge(slowBrain, InMemoryClaws.layer([]))),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({
        PLANCKCLAW_AGENTS_DIR: path.join(dir, "agents"),
        PLANCKCLAW_DIR: path.join(dir, "memory")
      })))
    )
    const agents = Context.get(yield* Layer.build(host), AgentHost.AgentHost)
    const reply = yield* Effect.forkChild(agents.send("alice", { text: "hi" }))
    yield* Deferred.await(asked)
    yield* TestClock.adjust("29 seconds")
    expect(reply.pollUnsafe()).toBeUndefined()
    yield* TestClock.adjust("1 second")
    expect(yield* Fiber.join(reply)).toEqual({ reply: "slow hello", stored: true })
  }))
`

/** The types of what a host assembles, written with the package's names (a requirement a host cannot name fails tsc). */
const namedTypes = `import type { Config, Layer } from "effect"
import { Agent, ScriptClaws } from "planckclaw"
import type { Brain, Claws, Compactor, Inbox, Memory, MemoryHold } from "planckclaw"

export const claws: Layer.Layer<Claws.Claws, Config.ConfigError, ScriptClaws.SpawnHelper> = ScriptClaws.layer
export const processes: Layer.Layer<ScriptClaws.SpawnHelper | ScriptClaws.Watchdog> = ScriptClaws.processesLayer
export const agent: Layer.Layer<
  Agent.Agent | Compactor.Compactor | Memory.Memory | Inbox.Inbox,
  Config.ConfigError | Memory.MemoryError | MemoryHold.MemoryInUse | MemoryHold.MemoryLockFailed,
  Brain.Brain | Claws.Claws
> = Agent.layerWithMemory
export const onHeld: Layer.Layer<
  Agent.Agent | Compactor.Compactor | Memory.Memory | Inbox.Inbox,
  Config.ConfigError | Memory.MemoryError,
  Brain.Brain | Claws.Claws | MemoryHold.MemoryHeld
> = Agent.layerOnHeldMemory
`

const runner = `import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { program } from "./example.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "host-example-"))
const reply = await Effect.runPromise(Effect.scoped(program(dir)))
console.log(JSON.stringify(reply))
`

describe("a host project on the Effect 4.1 line (after npm run build)", () => {
  beforeAll(async () => {
    const packed = JSON.parse(sh("npm pack", "npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", host], root)) as Array<{ filename: string }>
    const tarball = path.join(host, packed[0]!.filename)
    const versions = Object.fromEntries(
      ["effect", "@effect/platform-node", "@effect/vitest", "vitest", "vite", "typescript", "@types/node"].map((name) => [name, lockVersion(name)])
    )
    fs.writeFileSync(path.join(host, "package.json"), JSON.stringify({
      name: "planckclaw-host",
      private: true,
      type: "module",
      dependencies: { planckclaw: `file:${tarball}`, ...versions }
    }, null, 2))
    fs.writeFileSync(path.join(host, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        types: ["node"],
        strict: true,
        noEmit: true,
        allowImportingTsExtensions: true,
        skipLibCheck: false
      },
      include: ["*.ts"]
    }, null, 2))
    fs.writeFileSync(path.join(host, "example.ts"), embeddingExample())
    fs.writeFileSync(path.join(host, "run-example.ts"), runner)
    fs.writeFileSync(path.join(host, "host.test.ts"), hostTest)
    fs.writeFileSync(path.join(host, "adapters.ts"), adaptersExample())
    fs.writeFileSync(path.join(host, "named-types.ts"), namedTypes)
    // --legacy-peer-deps for @effect/platform-node's own peer, redis (not optional there, not in this lock
    // file): a host online without it gets redis from that package, not from planckclaw's optional peers.
    const registry = await LoopbackRegistry.start(root)
    const started = Date.now()
    try {
      await registry.npm(["install", "--legacy-peer-deps"], { cwd: host, env: userEnv(), cache: path.join(host, ".npm-cache") })
    } finally {
      timings["npm install"] = Date.now() - started
      await registry.close()
    }
    expect(registry.unknown).toEqual([])
  }, 180_000)

  afterAll(() => {
    console.log(`host project timings (ms): ${JSON.stringify(timings)}`)
    fs.rmSync(host, { recursive: true, force: true })
  })

  it("gets one copy of effect: the host's, under planckclaw too", () => {
    interface Tree {
      readonly version?: string
      readonly dependencies?: Record<string, Tree>
    }
    const tree = JSON.parse(sh("npm ls", "npm", ["ls", "effect", "--all", "--json"])) as Tree
    const versions = new Set<string>()
    const walk = (node: Tree) => {
      for (const [name, dependency] of Object.entries(node.dependencies ?? {})) {
        if (name === "effect" && dependency.version !== undefined) versions.add(dependency.version)
        walk(dependency)
      }
    }
    walk(tree)
    expect([...versions]).toEqual([lockVersion("effect")])
    expect(fs.existsSync(path.join(host, "node_modules", "planckclaw", "node_modules", "effect"))).toBe(false)
    expect(fs.existsSync(path.join(host, "node_modules", "planckclaw", "dist", "index.js"))).toBe(true)
  })

  it("typechecks the embedding example, its runner, the adapters, the named types and the host's TestClock test against the installed package", () => {
    expect(fs.readFileSync(path.join(host, "example.ts"), "utf8")).toContain(`from "planckclaw"`)
    sh("tsc", process.execPath, [path.join(host, "node_modules", "typescript", "bin", "tsc"), "-p", host])
  }, 120_000)

  it("runs the embedding example with node", () => {
    const output = sh("example", process.execPath, ["run-example.ts"])
    expect(JSON.parse(output.trim().split("\n").at(-1)!)).toMatchObject({ channel: "me", text: "Hello from the agent" })
  }, 60_000)

  it("loads docs/embedding.md's adapters with node, without redis (the HTTP client imported by its path)", () => {
    expect(fs.existsSync(path.join(host, "node_modules", "redis"))).toBe(false)
    expect(fs.readFileSync(path.join(host, "adapters.ts"), "utf8")).toContain(`from "planckclaw"`)
    sh("adapters", process.execPath, ["adapters.ts"])
  }, 60_000)

  it("runs the host's TestClock test with vitest", () => {
    const output = sh("vitest", process.execPath, [path.join(host, "node_modules", "vitest", "vitest.mjs"), "run", "--root", host])
    expect(output).toMatch(/1 passed/)
  }, 120_000)
})
