/**
 * Doctor's checks in process, against loopback stand-ins: the brain's API
 * (accepting, rejecting the key, lacking the model, unreachable, silent
 * under the TestClock), a claws directory with a broken claw, a memory held
 * by another process, runtime directories a run would refuse, and the
 * local Discord (token accepted or rejected, intent off, a channel the bot
 * cannot see).
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as BrainCheck from "../../../../src/cli/commands/doctor/BrainCheck.js"
import * as ClawsCheck from "../../../../src/cli/commands/doctor/ClawsCheck.js"
import * as DirectoryCheck from "../../../../src/cli/commands/doctor/DirectoryCheck.js"
import * as DiscordCheck from "../../../../src/cli/commands/doctor/DiscordCheck.js"
import { colourWanted, type Finding, render } from "../../../../src/cli/commands/doctor/DoctorCheck.js"
import { runLockName } from "../../../../src/memory/MemoryHold.js"
import * as AnthropicServer from "../../../support/AnthropicServer.js"
import * as ChatCompletionsServer from "../../../support/ChatCompletionsServer.js"
import * as FakeDiscord from "../../../support/FakeDiscord.js"
import { gone, sandbox, tool } from "../../../support/Sandbox.js"
import { awaitPendingSleep } from "../../../support/TestClockWait.js"

const key = "test-key-not-secret"
const model = "claude-haiku-4-5-20251001"

/** Runs a check with exactly these settings (no config.env, no environment). */
const withSettings = (settings: Record<string, string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(Object.fromEntries(new Map(Object.entries(settings))), { preserveEmptyStrings: true }))

const brain = (settings: Record<string, string>) =>
  BrainCheck.check.pipe(withSettings(settings), Effect.provide(FetchHttpClient.layer))

const lines = (findings: ReadonlyArray<Finding>) => findings.map((finding) => render(finding, false))

/** The Models API: `GET /v1/models/{id}` answers 200 for `served`, 404 for any other, 401 for another key. */
const anthropicModels = (served: string) => (request: AnthropicServer.RecordedRequest) =>
  request.headers["x-api-key"] !== key
    ? AnthropicServer.apiError(401, "authentication_error", "invalid x-api-key")
    : request.path === `/v1/models/${served}`
    ? AnthropicServer.respond(200, { type: "model", id: served, display_name: "Claude", created_at: "2025-10-01T00:00:00Z" })
    : AnthropicServer.apiError(404, "not_found_error", `model: ${request.path.split("/").pop()}`)

describe("doctor: the brain", () => {
  it.live("Anthropic: one GET of the model with the key and version headers; reachable, key accepted, model served", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(anthropicModels(model))
      const findings = yield* brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url })
      expect(lines(findings)).toEqual([
        `✔ brain: ${server.url} reachable, ANTHROPIC_API_KEY accepted`,
        `✔ model: ${model} is served`
      ])
      const [request] = yield* server.requests
      expect(request).toMatchObject({ method: "GET", path: `/v1/models/${model}`, rawBody: "" })
      expect(request!.headers).toMatchObject({ "x-api-key": key, "anthropic-version": "2023-06-01" })
      expect((yield* server.requests).length).toBe(1)
    }))

  it.live("Anthropic: a rejected key says rejected, never the key, and leaves the model unchecked", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(anthropicModels(model))
      const findings = yield* brain({ ANTHROPIC_API_KEY: "another-key-not-secret", ANTHROPIC_BASE_URL: server.url })
      expect(findings.map((finding) => finding.status)).toEqual(["fail", "skip"])
      expect(lines(findings)[0]).toBe(
        `✘ brain: ${server.url} rejected ANTHROPIC_API_KEY (401) → set ANTHROPIC_API_KEY to a valid key (console.anthropic.com → API keys)`
      )
      expect(lines(findings).join("\n")).not.toContain("another-key")
    }))

  it.live("Anthropic: a model the API lacks (404) fails the model line, naming it", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(anthropicModels("claude-other"))
      const findings = yield* brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_MODEL: "claude-nope" })
      expect(findings.map((finding) => finding.status)).toEqual(["pass", "fail"])
      expect(lines(findings)[1]).toContain(`✘ model: claude-nope is not served by ${server.url} (404) → set PLANCKCLAW_MODEL`)
    }))

  it.live("Anthropic: a model the API lacks, from an API that lists its models, names the ones it offers", () =>
    Effect.gen(function*() {
      const models = anthropicModels("claude-other")
      const server = yield* AnthropicServer.make((request) =>
        request.path === "/v1/models?limit=1000" && request.headers["x-api-key"] === key
          ? AnthropicServer.respond(200, { data: [{ type: "model", id: "claude-other" }, { type: "model", id: "claude-more" }], has_more: false })
          : models(request)
      )
      const findings = yield* brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url, PLANCKCLAW_MODEL: "claude-nope" })
      expect(lines(findings)[1]).toBe(
        `✘ model: model claude-nope is not served here; it offers: claude-other, claude-more (${server.url}) → ` +
          "set PLANCKCLAW_MODEL (or --model) to one of them"
      )
    }))

  it.live("another error answer is shown in the API's words, with a key it echoes redacted", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.apiError(529, "overloaded_error", `Overloaded (request by ${key})`)
      ))
      const findings = yield* brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url })
      expect(lines(findings)[0]).toBe(
        `✘ brain: ${server.url} answered 529: overloaded_error: Overloaded (request by <redacted>) → the API is busy or failing: try again later`
      )
    }))

  it.live("an unreachable API (closed port) fails the brain line saying nothing listens at its URL", () =>
    Effect.gen(function*() {
      const url = yield* AnthropicServer.unusedUrl
      const findings = yield* brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: url })
      expect(lines(findings)[0]).toBe(
        `✘ brain: nothing is listening at ${url}: is the model server running? → start it, or set ANTHROPIC_BASE_URL to where it listens`
      )
    }))

  it.effect("an API that never answers fails after 10 s of the TestClock, not before", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.hang))
      const fiber = yield* Effect.forkChild(brain({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url }))
      yield* server.awaitRequests(1)
      yield* awaitPendingSleep(10_000)
      yield* TestClock.adjust("9999 millis")
      yield* Effect.yieldNow
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      const findings = yield* Fiber.join(fiber)
      expect(lines(findings)[0]).toBe(`✘ brain: no answer from ${server.url} within 10s → check ANTHROPIC_BASE_URL and the network`)
    }))

  it.effect("a missing key is named without any request", () =>
    Effect.gen(function*() {
      const findings = yield* brain({})
      expect(lines(findings)).toEqual([
        "✘ brain: ANTHROPIC_API_KEY is not set → add export ANTHROPIC_API_KEY=\"...\" to config.env or set it in the environment"
      ])
    }))

  it.live("OpenAI-compatible: GET {base}/models/{model} with a Bearer key; a rejected key never shown", () =>
    Effect.gen(function*() {
      const server = yield* ChatCompletionsServer.make((request) =>
        request.headers.authorization !== `Bearer ${key}`
          // OpenAI's own 401 echoes (part of) the key: doctor must not repeat the body.
          ? ChatCompletionsServer.apiError(401, `Incorrect API key provided: ${request.headers.authorization}`)
          : request.path === "/v1/models/gpt-test"
          ? ChatCompletionsServer.respond(200, { id: "gpt-test", object: "model", created: 0, owned_by: "test" })
          : ChatCompletionsServer.apiError(404, "not found"))
      const settings = { PLANCKCLAW_BRAIN: "openai", OPENAI_BASE_URL: server.url, PLANCKCLAW_MODEL: "gpt-test" }
      expect(lines(yield* brain({ ...settings, OPENAI_API_KEY: key }))).toEqual([
        `✔ brain: ${server.url} reachable, OPENAI_API_KEY accepted`,
        "✔ model: gpt-test is served"
      ])
      const rejected = yield* brain({ ...settings, OPENAI_API_KEY: "wrong-key-not-secret" })
      expect(lines(rejected)[0]).toBe(
        `✘ brain: ${server.url} rejected OPENAI_API_KEY (401) → set OPENAI_API_KEY to a valid key for this server`
      )
      expect(lines(rejected).join("\n")).not.toContain("wrong-key")
      expect((yield* server.requests).map((request) => `${request.method} ${request.path}`)).toEqual([
        "GET /v1/models/gpt-test",
        "GET /v1/models/gpt-test"
      ])
    }))

  it.live("OpenAI-compatible: without /models/{model} (llama.cpp), the /models list decides; a model it lacks is named", () =>
    Effect.gen(function*() {
      const server = yield* ChatCompletionsServer.make((request) =>
        request.path === "/v1/models"
          ? ChatCompletionsServer.respond(200, { object: "list", data: [{ id: "qwen3:8b", object: "model" }] })
          : ChatCompletionsServer.apiError(404, "File Not Found", "llamacpp"))
      const settings = { PLANCKCLAW_BRAIN: "openai", OPENAI_BASE_URL: server.url }
      expect(lines(yield* brain({ ...settings, PLANCKCLAW_MODEL: "qwen3:8b" }))).toEqual([
        `✔ brain: ${server.url} reachable, no key needed`,
        "✔ model: qwen3:8b is served"
      ])
      const lacking = yield* brain({ ...settings, PLANCKCLAW_MODEL: "llama3" })
      expect(lines(lacking)[1]).toBe(
        `✘ model: llama3 is not among the 1 models ${server.url} lists (qwen3:8b) → set PLANCKCLAW_MODEL to one of them`
      )
    }))

  it.effect("a brain served from outside is not checked, and is no failure", () =>
    Effect.gen(function*() {
      const findings = yield* brain({ PLANCKCLAW_BRAIN: "none" })
      expect(findings).toEqual([expect.objectContaining({ subject: "brain", status: "skip" })])
    }))

  it.effect("a brain executable is not asked, but one a run would refuse is ✘ with why: no execute bit, a #! interpreter that is none", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const script = (name: string, text: string, mode: number) => {
        const file = path.join(box.dir, name)
        fs.writeFileSync(file, text, { mode })
        return file
      }
      const usable = script("brain.sh", "#!/bin/sh\nexit 0\n", 0o755)
      expect(lines(yield* brain({ PLANCKCLAW_BRAIN: usable }))).toEqual([`– brain: served by ${usable}; not checked`])
      const remedy = "make it an executable file (chmod +x, a #! line naming an installed interpreter) " +
        "or set PLANCKCLAW_BRAIN to anthropic, openai, none or another executable"
      const plain = script("plain.sh", "#!/bin/sh\nexit 0\n", 0o644)
      expect(lines(yield* brain({ PLANCKCLAW_BRAIN: plain }))).toEqual([
        `✘ brain: bridge ${plain} is not an executable file → ${remedy}`
      ])
      const crlf = script("crlf.sh", "#!/bin/sh\r\nexit 0\r\n", 0o755)
      expect(lines(yield* brain({ PLANCKCLAW_BRAIN: crlf }))).toEqual([
        `✘ brain: bridge ${crlf} names "/bin/sh\\r" on its #! line, which is not an executable file ` +
          `(the file has Windows line endings: convert them, e.g. with dos2unix) → ${remedy}`
      ])
    }))
})

describe("doctor: claws, memory, runtime", () => {
  it.effect("every claw with what `tools` finds: its tools, or the line that failed and why", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      box.claw("dice.sh", `${tool("roll_dice")}\n${tool("flip_coin")}\necho 4\n`)
      box.claw("broken.sh", `${tool("fine")}\n#TOOLS:{"name": "broken"\n#TOOLS:{"name":"weather","input_schema":{"type":"object","required":"city"}}\n`)
      box.claw("helper.sh", "echo helper\n")
      const findings = yield* ClawsCheck.check.pipe(withSettings({ CLAWS_DIR: box.claws }))
      expect(lines(findings)).toEqual([
        `✔ claws: ${box.claws}: 3 tools from 3 claws, 2 declarations skipped`,
        "✔ claw broken.sh: fine",
        expect.stringMatching(
          new RegExp(`^✘ claw broken\\.sh: ${box.claws}/broken\\.sh:4: invalid JSON after #TOOLS: .* → fix that #TOOLS: line`)
        ),
        `✘ claw broken.sh: ${box.claws}/broken.sh:5: invalid tool definition: "required" must be an array of property names ` +
        "(at input_schema.required) → fix that #TOOLS: line (one JSON tool declaration)",
        "✔ claw dice.sh: roll_dice, flip_coin",
        "– claw helper.sh: declares no tools (no #TOOLS: line)",
        // Tried for real, by a helper of the check's own.
        expect.stringMatching(/^✔ claw starter: the spawn helper \(pid \d+\) starts claws$/)
      ])
      const helper = Number(/pid (\d+)/.exec(lines(findings).at(-1)!)![1])
      expect(helper).not.toBe(process.pid)
      // Ended with the check: doctor leaves no helper behind.
      yield* TestClock.withLive(gone("the check's spawn helper", helper))
      const missing = yield* ClawsCheck.check.pipe(withSettings({ CLAWS_DIR: box.path("nowhere") }))
      expect(lines(missing)).toEqual([
        `✘ claws: ${box.path("nowhere")} does not exist → create it and put your claws (*.sh) in it, or set CLAWS_DIR`
      ])
    }))

  it.effect("a memory directory held by another live process fails `other run`; a dead owner's lock passes", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      box.writeMemory("history.jsonl", "")
      fs.chmodSync(box.memory, 0o700)
      const holder = yield* Effect.acquireRelease(
        Effect.sync(() => child.spawn("sleep", ["30"], { stdio: "ignore" })),
        (proc) => Effect.sync(() => proc.kill("SIGKILL"))
      )
      fs.writeFileSync(path.join(box.memory, runLockName), `${holder.pid}\n`)
      const held = yield* DirectoryCheck.memory.pipe(withSettings({ PLANCKCLAW_DIR: box.memory }))
      expect(held[0]).toMatchObject({ subject: "memory", status: "pass" })
      expect(held[0]!.detail).toMatch(/^.* \(yours, mode 0700; .* free\)$/)
      expect(lines(held)[1]).toBe(
        `✘ other run: a planckclaw run, or a serve running this agent (pid ${holder.pid}), holds ${box.memory} → stop it before starting another run on this memory (compact and usage work beside it)`
      )
      holder.kill("SIGKILL")
      yield* Effect.callback<void>((resume) => void holder.once("exit", () => resume(Effect.void)))
      const released = yield* DirectoryCheck.memory.pipe(withSettings({ PLANCKCLAW_DIR: box.memory }))
      expect(lines(released)[1]).toBe(
        `✔ other run: no other run holds ${box.memory}; the stale lock of pid ${holder.pid} will be taken over`
      )
    }))

  it.effect("memory: a directory others can write, and a memory file that is a link, fail with what to do", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      box.writeMemory("soul.md", "You are terse.")
      fs.chmodSync(box.memory, 0o777)
      const open = yield* DirectoryCheck.memory.pipe(withSettings({ PLANCKCLAW_DIR: box.memory }))
      expect(lines(open)[0]).toBe(`✘ memory: ${box.memory} can be written by other users (mode 0777) → chmod 700 ${box.memory}`)
      fs.chmodSync(box.memory, 0o700)
      fs.symlinkSync("/etc/hostname", path.join(box.memory, "history.jsonl"))
      const linked = yield* DirectoryCheck.memory.pipe(withSettings({ PLANCKCLAW_DIR: box.memory }))
      expect(linked[0]).toMatchObject({ status: "fail", remedy: expect.stringContaining("history.jsonl away") })
    }))

  it.effect("runtime: absent passes (a run makes it); open to others or held by a live run fails", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const check = DirectoryCheck.runtime.pipe(withSettings({ PLANCKCLAW_RUN_DIR: box.runDir }))
      expect((yield* check)[0]).toMatchObject({ status: "pass", detail: expect.stringContaining("does not exist yet") })
      fs.mkdirSync(box.runDir, { mode: 0o755 })
      fs.chmodSync(box.runDir, 0o755)
      expect(lines(yield* check)[0]).toMatch(/^✘ runtime: .* is open to other users \(mode 0755\); a run refuses it → chmod 700/)
      fs.chmodSync(box.runDir, 0o700)
      fs.writeFileSync(path.join(box.runDir, "planckclaw.pid"), `${process.pid}\n`)
      expect(lines(yield* check)[0]).toContain(`is in use by a live run (pid ${process.pid})`)
      // Nothing was changed or removed.
      expect(fs.readdirSync(box.runDir)).toEqual(["planckclaw.pid"])
    }))
})

describe("doctor: Discord", () => {
  const token = "test-bot-token"
  const botUserId = "100000000000000001"
  const channel = "300000000000000001"
  const fake = (options: Partial<FakeDiscord.FakeDiscordOptions> = {}) =>
    FakeDiscord.make({ token, botUserId, guildId: "400000000000000001", channelIds: [channel], ...options })
  const discord = (settings: Record<string, string>) =>
    DiscordCheck.check.pipe(withSettings(settings), Effect.provide(FetchHttpClient.layer))

  it.live("a token Discord accepts, the Message Content intent on and a visible channel pass", () =>
    Effect.gen(function*() {
      const server = yield* fake()
      const findings = yield* discord({ DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: channel, DISCORD_API_URL: server.apiUrl })
      expect(lines(findings)).toEqual([
        "✔ discord: DISCORD_BOT_TOKEN accepted (bot planckclaw)",
        "✔ discord intents: Message Content intent enabled",
        `✔ discord channel ${channel}: #channel-${channel} visible to the bot`
      ])
      expect(server.rest().map((record) => `${record.method} ${record.path} ${record.authorization}`)).toEqual([
        `GET /api/v10/users/@me Bot ${token}`,
        `GET /api/v10/applications/@me Bot ${token}`,
        `GET /api/v10/channels/${channel} Bot ${token}`
      ])
    }))

  it.live("a rejected token says rejected and what to do, never the token", () =>
    Effect.gen(function*() {
      const server = yield* fake()
      const findings = yield* discord({ DISCORD_BOT_TOKEN: "Bot other-bot-token", DISCORD_CHANNEL_ID: channel, DISCORD_API_URL: server.apiUrl })
      expect(findings.map((finding) => finding.status)).toEqual(["fail", "skip"])
      expect(lines(findings)[0]).toMatch(/^✘ discord: Discord rejected DISCORD_BOT_TOKEN \(401\) → reset the token/)
      expect(lines(findings).join("\n")).not.toContain("other-bot-token")
    }))

  it.live("the Message Content intent off, and a channel the bot cannot see, each fail with what to do", () =>
    Effect.gen(function*() {
      const server = yield* fake({ applicationFlags: 1 << 23 })
      const findings = yield* discord({
        DISCORD_BOT_TOKEN: token,
        DISCORD_CHANNEL_ID: `${channel},300000000000000009`,
        DISCORD_API_URL: server.apiUrl
      })
      expect(lines(findings).slice(1)).toEqual([
        expect.stringMatching(/^✘ discord intents: the Message Content intent is off: .* → .*switch on Message Content Intent$/),
        `✔ discord channel ${channel}: #channel-${channel} visible to the bot`,
        expect.stringMatching(/^✘ discord channel 300000000000000009: the bot cannot see this channel \(404\) → invite the bot/)
      ])
    }))

  it.live("a channel Discord fails to describe (5xx, 429) is Discord's failure, not the bot's access", () =>
    Effect.gen(function*() {
      const server = yield* fake()
      yield* server.script("GET", new RegExp(`/channels/${channel}$`), [
        { status: 503, body: { message: "Service Unavailable" } },
        { status: 429, headers: { "retry-after": "30" }, body: { message: "You are being rate limited.", retry_after: 30, global: false } }
      ])
      for (const status of [503, 429]) {
        const findings = yield* discord({ DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: channel, DISCORD_API_URL: server.apiUrl })
        const line = lines(findings)[2]!
        expect(line).toMatch(new RegExp(`^✘ discord channel ${channel}: .*answered ${status}.* → try again later`))
        expect(line).not.toMatch(/cannot see|invite/)
      }
    }))

  it.live("a category given as a channel fails: it holds no messages", () =>
    Effect.gen(function*() {
      const category = "300000000000000050"
      const server = yield* fake({ categoryIds: [category] })
      const findings = yield* discord({ DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: category, DISCORD_API_URL: server.apiUrl })
      expect(lines(findings)[2]).toMatch(
        /^✘ discord channel 300000000000000050: #category-300000000000000050 is a category, which holds no messages → .*Copy Channel ID/
      )
    }))

  it.effect("not configured: one skipped line; a bad setting is named", () =>
    Effect.gen(function*() {
      expect(lines(yield* discord({}))).toEqual(["– discord: not configured (DISCORD_BOT_TOKEN is not set)"])
      const bad = yield* discord({ DISCORD_BOT_TOKEN: token, DISCORD_CHANNEL_ID: "general" })
      expect(bad[0]).toMatchObject({ status: "fail", detail: expect.stringContaining("DISCORD_CHANNEL_ID") })
    }))
})

describe("doctor: lines", () => {
  it("colour only on a terminal without NO_COLOR; plain lines have no escape codes", () => {
    expect(colourWanted({ isTTY: true }, {})).toBe(true)
    expect(colourWanted({ isTTY: true }, { NO_COLOR: "1" })).toBe(false)
    expect(colourWanted({ isTTY: false }, {})).toBe(false)
    expect(colourWanted({}, { TERM: "xterm" })).toBe(false)
    const finding: Finding = { subject: "brain", status: "fail", detail: "down", remedy: "wait" }
    expect(render(finding, false)).toBe("✘ brain: down → wait")
    expect(render(finding, true)).toBe("\u001b[31m✘\u001b[0m brain: down → wait")
  })
})
