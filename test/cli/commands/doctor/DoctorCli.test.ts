/**
 * `planckclaw doctor` as a user runs it: the built command, piped (so no
 * colour), against a loopback Anthropic API that accepts or rejects the
 * key, with the exit code and every line asserted. Needs `npm run build`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runLockName } from "../../../../src/memory/MemoryHold.js"
import * as AnthropicServer from "../../../support/AnthropicServer.js"
import * as ChatCompletionsServer from "../../../support/ChatCompletionsServer.js"
import * as Cli from "../../../support/Cli.js"
import { sandbox, tempDir, tool } from "../../../support/Sandbox.js"

const key = "test-key-not-secret"
const model = "claude-haiku-4-5-20251001"

/** The Models API for one model; any other key is refused with a body that echoes it, as some APIs do. */
const modelsApi = (request: AnthropicServer.RecordedRequest) =>
  request.headers["x-api-key"] === key
    ? AnthropicServer.respond(200, { type: "model", id: model, display_name: "Claude Haiku 4.5", created_at: "2025-10-01T00:00:00Z" })
    : AnthropicServer.apiError(401, "authentication_error", `invalid x-api-key ${request.headers["x-api-key"]}`)

const setup = (settings: Record<string, string>) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(modelsApi)
    const box = yield* sandbox({ ANTHROPIC_BASE_URL: server.url, ...settings }, "planckclaw-doctor-")
    box.claw("dice.sh", `${tool("roll_dice")}\necho 4\n`)
    return { server, box }
  })

describe("planckclaw doctor (built command)", () => {
  it.live("all checks pass: one ✔ line each, no escape codes, exit 0", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup({})
      // The key from config.env, as most users keep it.
      fs.writeFileSync(box.path("config.env"), `# from the console\nexport ANTHROPIC_API_KEY="${key}"\n`)
      const result = yield* Cli.run(["doctor"], { cwd: box.dir, env: box.env })
      expect(result.stdout.split("\n")).toEqual([
        `✔ home: ${box.dir} (the current directory, a PlanckClaw home)`,
        "✔ configuration: config.env and the environment parse",
        `✔ brain: ${server.url} reachable, ANTHROPIC_API_KEY accepted`,
        `✔ model: ${model} is served`,
        `✔ claws: ${box.claws}: 1 tool from 1 claw`,
        "✔ claw dice.sh: roll_dice",
        expect.stringMatching(/^✔ claw starter: the spawn helper \(pid \d+\) starts claws$/),
        expect.stringMatching(new RegExp(`^✔ memory: ${box.memory} does not exist yet; a run creates it \\(mode 0700; .* free\\)$`)),
        `✔ other run: no other run holds ${box.memory}`,
        expect.stringMatching(new RegExp(`^✔ runtime: ${box.runDir} does not exist yet; a run creates it`)),
        "– discord: not configured (DISCORD_BOT_TOKEN is not set)",
        ""
      ])
      expect(result.stdout).not.toContain("\u001b[")
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      // Doctor made nothing.
      expect(fs.existsSync(box.memory)).toBe(false)
      expect(fs.existsSync(box.runDir)).toBe(false)
      expect((yield* server.requests).map((request) => `${request.method} ${request.path}`)).toEqual([`GET /v1/models/${model}`])
    }))

  it.live("a rejected key and a memory held by another run: ✘ lines with what to do, the key never shown, exit 1", () =>
    Effect.gen(function*() {
      const { box, server } = yield* setup({ ANTHROPIC_API_KEY: "wrong-key-not-secret" })
      box.writeMemory("history.jsonl", "")
      // This test's own process stands for the other run.
      fs.writeFileSync(path.join(box.memory, runLockName), `${process.pid}\n`)
      const result = yield* Cli.run(["doctor"], { cwd: box.dir, env: box.env })
      const lines = result.stdout.split("\n")
      expect(lines).toContain(
        `✘ brain: ${server.url} rejected ANTHROPIC_API_KEY (401) → set ANTHROPIC_API_KEY to a valid key (console.anthropic.com → API keys)`
      )
      expect(lines).toContain("– model: not checked: the key was rejected")
      expect(lines).toContain(
        `✘ other run: a planckclaw run, or a serve running this agent (pid ${process.pid}), holds ${box.memory} → stop it before starting another run on this memory (compact and usage work beside it)`
      )
      expect(lines.filter((line) => line.startsWith("✘"))).toHaveLength(2)
      expect(result.stdout + result.stderr).not.toContain("wrong-key")
      expect(result.stderr).toBe("planckclaw: 2 of 11 checks failed\n")
      expect(result.code).toBe(1)
    }))

  it.live("run in a folder whose config.env of ours is no home's: ✔ the home in use, ✘ the file not read and what to do, exit 1", () =>
    Effect.gen(function*() {
      const { box } = yield* setup({ ANTHROPIC_API_KEY: key })
      const folder = yield* tempDir("planckclaw-doctor-folder-")
      fs.writeFileSync(path.join(folder, "config.env"), "HISTORY_MAX=300\n")
      const result = yield* Cli.run(["doctor"], { cwd: folder, env: { ...box.env, HOME: box.dir } })
      const lines = result.stdout.split("\n")
      expect(lines.slice(0, 2)).toEqual([
        `✔ home: ${path.join(box.dir, ".planckclaw")} (the default home); no config.env there yet (\`planckclaw init\` makes one)`,
        `✘ home: ${path.join(folder, "config.env")} is not read: its directory is no PlanckClaw home (no memory/, claws/ or agents/ beside it) → \`planckclaw init ${folder}\` makes it one, or set PLANCKCLAW_HOME`
      ])
      expect(lines.filter((line) => line.startsWith("✘"))).toHaveLength(1)
      expect(result.code).toBe(1)
    }))

  it.live("a config.env that does not parse is the one ✘ line, naming its line, exit 1", () =>
    Effect.gen(function*() {
      const { box } = yield* setup({})
      fs.writeFileSync(box.path("config.env"), `# keys\nANTHROPIC_API_KEY="${key}\n`)
      const result = yield* Cli.run(["doctor"], { cwd: box.dir, env: box.env })
      expect(result.stdout).toBe(`✘ configuration: ${box.path("config.env")}:2: unterminated double quote (values cannot span lines); the line is not shown, as it may hold a secret → fix that line of config.env\n`)
      expect(result.stdout).not.toContain(key)
      expect(result.code).toBe(1)
    }))

  it.live("a config.env that cannot be read is the one ✘ line, with a remedy for the file, not for a line of it", () =>
    Effect.gen(function*() {
      const { box } = yield* setup({})
      fs.symlinkSync(box.path("nowhere.env"), box.path("config.env"))
      const result = yield* Cli.run(["doctor"], { cwd: box.dir, env: { ...box.env, PLANCKCLAW_HOME: box.dir } })
      expect(result.stdout).toMatch(/^✘ configuration: cannot read .*config\.env: ENOENT[^\n]* → make config\.env readable, or remove it\n$/)
      expect(result.code).toBe(1)
    }))

  it.live("an installation without the spawn helper's program: ✘ claw starter, saying what it costs and what to do, exit 1", () =>
    Effect.gen(function*() {
      const { box } = yield* setup({ ANTHROPIC_API_KEY: key })
      // A copy of the installed package whose dist/cli/ lacks the helper's bundle (an interrupted build or install).
      const root = yield* tempDir("planckclaw-no-helper-")
      for (const part of ["bin", "dist", "memory", "package.json"]) {
        fs.cpSync(path.join(Cli.REPO, part), path.join(root, part), {
          recursive: true,
          filter: (source) => path.basename(source) !== "spawn-helper.cjs"
        })
      }
      fs.symlinkSync(path.join(Cli.REPO, "node_modules"), path.join(root, "node_modules"))
      const result = yield* Cli.run(["doctor"], { cwd: box.dir, env: box.env, bin: path.join(root, "bin", "planckclaw") })
      const lines = result.stdout.split("\n")
      expect(lines).toContain(
        `✘ claw starter: no spawn helper: its program ${path.join(root, "dist", "cli", "spawn-helper.cjs")} is missing; ` +
          "claws are started from the agent's own process, which stops its turns for each start → run `npm run build` in planckclaw's directory, or install it again"
      )
      expect(lines.filter((line) => line.startsWith("✘"))).toHaveLength(1)
      expect(lines).toContain("✔ claw dice.sh: roll_dice")
      expect(result.stderr).toBe("planckclaw: 1 of 11 checks failed\n")
      expect(result.code).toBe(1)
    }))

  it.live("--brain openai checks that brain: a model the server lacks is ✘ naming it, exit 1", () =>
    Effect.gen(function*() {
      const server = yield* ChatCompletionsServer.make((request) =>
        request.path === "/v1/models"
          ? ChatCompletionsServer.respond(200, { object: "list", data: [{ id: "qwen3:8b", object: "model" }] })
          : ChatCompletionsServer.apiError(404, "model not found", "ollama"))
      const { box } = yield* setup({ OPENAI_BASE_URL: server.url, PLANCKCLAW_MODEL: "llama3" })
      const result = yield* Cli.run(["doctor", "--brain", "openai"], { cwd: box.dir, env: box.env })
      const lines = result.stdout.split("\n")
      expect(lines).toContain(`✔ brain: ${server.url} reachable, no key needed`)
      expect(lines).toContain(`✘ model: llama3 is not among the 1 models ${server.url} lists (qwen3:8b) → set PLANCKCLAW_MODEL to one of them`)
      expect(lines.filter((line) => line.startsWith("✘"))).toHaveLength(1)
      expect((yield* server.requests).map((request) => request.path)).toEqual(["/v1/models/llama3", "/v1/models"])
      expect(result.code).toBe(1)
    }))
})
