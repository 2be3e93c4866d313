/**
 * End to end: the built command, as a child process, against an
 * Anthropic-compatible server on loopback, with the shipped claws.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { APOLOGY } from "../../src/agent/Agent.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import * as FakeDiscord from "../support/FakeDiscord.js"
import { line } from "../support/Harness.js"
import { type Sandbox, sandbox } from "../support/Sandbox.js"

/** A sandbox with the shipped claws whose brain is a fresh loopback server answering with `handler`. */
const setup = (handler: AnthropicServer.Handler, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      CLAWS_DIR: path.join(Cli.REPO, "claws"),
      ...extra
    }, "planckclaw-e2e-")
    return { server, cwd: box.dir, memory: box.memory, claws: box.claws, env: box.env, read: box.memoryFile, box }
  })

describe("npm start (the quick start)", () => {
  it.live("runs the agent with the checkout as its home: the shipped claws, the key from the environment", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.replies(AnthropicServer.text("Hello from the checkout.")))
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: server.url }, "planckclaw-npm-start-")
      // HOME is the sandbox (no ~/.planckclaw), memory goes to the sandbox: only the claws can come from the checkout.
      const env: NodeJS.ProcessEnv = { ...box.env, HOME: box.dir, PLANCKCLAW_DIR: box.memory, npm_config_update_notifier: "false" }
      delete env.CLAWS_DIR
      const result = yield* Effect.callback<{ code: number | null; stdout: string }>((resume) => {
        const npm = child.spawn("npm", ["start", "--silent"], { cwd: Cli.REPO, env })
        let stdout = ""
        npm.stdout.setEncoding("utf8").on("data", (chunk: string) => void (stdout += chunk))
        npm.on("close", (code) => resume(Effect.succeed({ code, stdout })))
        npm.stdin.end("hi\n")
      })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("Hello from the checkout.\n")
      const [request] = yield* server.awaitRequests(1)
      // The shipped claws, and the schedule tools every run offers beside them.
      expect((request!.body.tools ?? []).map((tool) => tool.name).sort()).toEqual(["get_time", "roll_dice", "schedule_add", "schedule_list", "schedule_remove", "system_status"])
      expect(box.memoryFile("history.jsonl")).toBe(line("user", "hi") + line("assistant", "Hello from the checkout."))
    }), 60_000)
})

describe("planckclaw run (built command)", () => {
  it.live("answers piped messages in order, runs several shipped claws in one round, and exits 0", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(
        AnthropicServer.toolUse([
          { id: "tu_1", name: "get_time", input: {} },
          { id: "tu_2", name: "roll_dice", input: { sides: 20, count: 2 } }
        ]),
        AnthropicServer.text("It is noon and you rolled well."),
        AnthropicServer.text("Hello again.")
      ))
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "what time is it? roll 2d20\nhi\n" })
      expect(result.code).toBe(0)
      // The reply begins with what the model wrote before its tool calls.
      expect(result.stdout).toBe("Let me check.\n\nIt is noon and you rolled well.\nHello again.\n")
      expect(result.stderr).not.toContain("test-key-not-secret")

      const requests = yield* t.server.awaitRequests(3)
      expect(requests.map((r) => r.path)).toEqual(["/v1/messages", "/v1/messages", "/v1/messages"])
      const first = requests[0]!.body
      expect((first.tools ?? []).map((tool) => tool.name).sort()).toEqual(["get_time", "roll_dice", "schedule_add", "schedule_list", "schedule_remove", "system_status"])
      expect(first.messages).toEqual([{ role: "user", content: "what time is it? roll 2d20" }])
      const second = requests[1]!.body
      const results = second.messages[2]!.content as Array<{ tool_use_id: string; content: string }>
      expect(results.map((r) => r.tool_use_id)).toEqual(["tu_1", "tu_2"])
      expect(results[0]!.content).toMatch(/Unix timestamp: \d+/)
      expect(results[1]!.content).toMatch(/^Rolled 2d20: \d+, \d+\nTotal: \d+$/)
      const third = requests[2]!.body
      // History lines go as text blocks, the last one with the prompt-caching breakpoint (on by default).
      expect(third.messages).toEqual([
        { role: "user", content: [{ type: "text", text: "what time is it? roll 2d20" }] },
        {
          role: "assistant",
          content: [{ type: "text", text: "Let me check.\n\nIt is noon and you rolled well.", cache_control: { type: "ephemeral" } }]
        },
        { role: "user", content: "hi" }
      ])
      expect(t.read("history.jsonl")).toBe(
        line("user", "what time is it? roll 2d20") + line("assistant", "Let me check.\n\nIt is noon and you rolled well.") +
          line("user", "hi") + line("assistant", "Hello again.")
      )
    }))

  it.live("apologises when the brain fails, stores nothing, goes on, and exits 3", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(
        AnthropicServer.apiError(503, "api_error", "Service unavailable"),
        AnthropicServer.text("Recovered.")
      ))
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "one\ntwo\n" })
      // Every message answered in turn; one reply was the apology, so the exit status says so.
      expect(result.code).toBe(3)
      expect(result.stdout).toBe(`${APOLOGY}\nRecovered.\n`)
      expect(result.stderr).toContain("Service unavailable")
      expect(t.read("history.jsonl")).toBe(line("user", "two") + line("assistant", "Recovered."))
    }))

  it.live("a refused request (400) is answered as a misconfigured brain, the log naming the setting", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(
        AnthropicServer.apiError(400, "invalid_request_error", "bad request"),
        AnthropicServer.apiError(401, "authentication_error", "invalid x-api-key")
      ))
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "one\ntwo\n" })
      expect(result.code).toBe(3)
      expect(result.stdout).toBe(
        "I can't think right now: my brain is misconfigured (the API refused the request as invalid). " +
          "The log says what to fix.\n" +
          "I can't think right now: my brain is misconfigured (the API key was refused). The log says what to fix.\n"
      )
      expect(result.stderr).toContain("bad request")
      expect(result.stderr).toContain("fix PLANCKCLAW_MODEL")
      expect(result.stderr).toContain("fix ANTHROPIC_API_KEY")
      expect(result.stderr).not.toContain("test-key-not-secret")
      expect(yield* t.server.requests).toHaveLength(2)
      expect(t.read("history.jsonl") ?? "").toBe("")
    }))

  it.live("without ANTHROPIC_API_KEY prints one line on how to set it and exits 2", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("unused")))
      const { ANTHROPIC_API_KEY: _, ...env } = t.env
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env, input: "hi\n" })
      expect(result.code).toBe(2)
      expect(result.stdout).toBe("")
      expect(result.stderr.trim().split("\n")).toHaveLength(1)
      expect(result.stderr).toContain("ANTHROPIC_API_KEY is not set")
      expect(result.stderr).toContain("config.env")
    }))

  it.live("rejects a bad value from config.env, naming the key and what was expected", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("unused")))
      fs.writeFileSync(path.join(t.cwd, "config.env"), "export HISTORY_MAX=\"lots\"\n")
      const result = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "hi\n" })
      expect(result.code).toBe(2)
      expect(result.stderr.trim()).toBe(
        "planckclaw: configuration error: HISTORY_MAX: expected an integer from 1 to 1000000000, got \"lots\""
      )
    }))

  it.live("lets the environment override config.env, and refuses an unknown bridge", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("from the env server")))
      fs.writeFileSync(path.join(t.cwd, "config.env"), "export ANTHROPIC_BASE_URL=\"http://127.0.0.1:9\"\n")
      const ok = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "hi\n" })
      expect(ok.stdout).toBe("from the env server\n")
      const bad = yield* Cli.run(["run", "--bridge", "carrier-pigeon"], { cwd: t.cwd, env: t.env, input: "" })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain("unknown bridge 'carrier-pigeon'")
    }))

  it.live("refuses a second run on the same memory directory", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("first")))
      const first = yield* Cli.start(["run"], { cwd: t.cwd, env: t.env })
      yield* first.write("hello\n")
      yield* first.lines(1)
      const second = yield* Cli.run(["run"], { cwd: t.cwd, env: t.env, input: "hi\n" })
      expect(second.code).toBe(1)
      expect(second.stderr).toContain(`another planckclaw (pid ${first.process.pid}: a run, or a serve that started this agent) is using the memory directory`)
      yield* first.closeInput
      expect((yield* first.done).code).toBe(0)
    })))
})

describe("planckclaw compact (built command)", () => {
  const history = (count: number) =>
    Array.from({ length: count }, (_, i) => line(i % 2 === 0 ? "user" : "assistant", `m${i}`)).join("")

  it.live("compacts on demand outside a run and prints what it did", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("A tidy summary.")), { HISTORY_KEEP: "2" })
      fs.mkdirSync(t.memory)
      fs.writeFileSync(path.join(t.memory, "history.jsonl"), history(6))
      const result = yield* Cli.run(["compact"], { cwd: t.cwd, env: t.env })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe(
        "Compacted: summarised 4 lines into summary.md (16 bytes, 1 request); kept 2 lines in history.jsonl.\n"
      )
      expect(t.read("summary.md")).toBe("A tidy summary.\n")
      expect(t.read("history.jsonl")).toBe(line("user", "m4") + line("assistant", "m5"))
      const again = yield* Cli.run(["compact"], { cwd: t.cwd, env: t.env })
      expect(again.stdout).toBe("Nothing to compact: history holds no lines older than the last HISTORY_KEEP.\n")
    }))

  it.live("with PLANCKCLAW_BRAIN=none, refuses with exit 2, pointing at /compact, and changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("never asked")), { HISTORY_KEEP: "2" })
      fs.mkdirSync(t.memory)
      fs.writeFileSync(path.join(t.memory, "history.jsonl"), history(6))
      const result = yield* Cli.run(["compact"], { cwd: t.cwd, env: { ...t.env, PLANCKCLAW_BRAIN: "none" } })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain("PLANCKCLAW_BRAIN is none: send /compact to the running agent")
      expect(t.read("history.jsonl")).toBe(history(6))
    }))

  /** A brain bridge script (noting its pipes and whether it saw each key), answering every request with `answer`. */
  const bridgeBrain = (box: Sandbox, answer: string) =>
    box.script(
      "brain.sh",
      String.raw`echo "$PLANCKCLAW_BRAIN_IN" > "$D/brain.pipes"
a=; [ -n "$ANTHROPIC_API_KEY" ] && a=set
d=; [ -n "$DISCORD_BOT_TOKEN" ] && d=set
echo "anthropic:$a discord:$d" > "$D/brain.keys"
while :; do
  request=
  while IFS= read -r line; do
    [ -z "$line" ] && break
    request=$line
  done < "$PLANCKCLAW_BRAIN_IN"
  [ -n "$request" ] || exit 1
  ${answer}
done
`
    )

  it.live("with an executable brain, starts it on pipes of its own, compacts with its summary, and removes its pipes", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("never asked")), { HISTORY_KEEP: "2" })
      fs.mkdirSync(t.memory)
      fs.writeFileSync(path.join(t.memory, "history.jsonl"), history(6))
      const tmp = t.box.path("tmp")
      // What a compact killed with its bridge running left: its maker's pid is gone.
      fs.mkdirSync(path.join(tmp, "planckclaw-brain-999999999-left"), { recursive: true })
      fs.writeFileSync(path.join(tmp, "planckclaw-brain-999999999-left", "planckclaw.pid"), "999999999\n")
      const brain = bridgeBrain(
        t.box,
        `printf '{"type":"message","role":"assistant","content":[{"type":"text","text":"From the bridge."}],"stop_reason":"end_turn"}\n\n' > "$PLANCKCLAW_BRAIN_OUT"`
      )
      const env = { ...t.env, PLANCKCLAW_BRAIN: brain, TMPDIR: tmp, DISCORD_BOT_TOKEN: "test-token-not-secret" }
      const result = yield* Cli.run(["compact"], { cwd: t.cwd, env })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe(
        "Compacted: summarised 4 lines into summary.md (17 bytes, 1 request); kept 2 lines in history.jsonl.\n"
      )
      expect(t.read("summary.md")).toBe("From the bridge.\n")
      expect(t.read("history.jsonl")).toBe(line("user", "m4") + line("assistant", "m5"))
      // Its own pipes, in a private directory under TMPDIR (not the run's), gone once the command ended,
      // with the leftover of the killed one.
      const pipe = t.box.read("brain.pipes")!.trim()
      expect(path.dirname(path.dirname(pipe))).toBe(tmp)
      expect(fs.readdirSync(tmp)).toEqual([])
      // The brain keys, and no other secret, as a run gives its brain bridge.
      expect(t.box.read("brain.keys")).toBe("anthropic:set discord:\n")
      expect(yield* t.server.requests).toHaveLength(0)
    }))

  it.live("with an executable brain that dies on every request, fails with exit 1, naming it, and changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("never asked")), { HISTORY_KEEP: "2" })
      fs.mkdirSync(t.memory)
      fs.writeFileSync(path.join(t.memory, "history.jsonl"), history(6))
      const brain = bridgeBrain(t.box, "exit 1")
      const result = yield* Cli.run(["compact"], { cwd: t.cwd, env: { ...t.env, PLANCKCLAW_BRAIN: brain } })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("compaction failed, memory unchanged: the brain could not summarise")
      expect(result.stderr).toContain("exited before it answered, twice")
      expect(t.read("history.jsonl")).toBe(history(6))
      expect(t.read("summary.md")).toBeUndefined()
    }), 60_000)

  it.live("compacts while a run is active on the same directory, losing no line", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup((request) =>
        AnthropicServer.isCompaction(request)
          ? AnthropicServer.text("Summary.")
          : AnthropicServer.text(`re: ${AnthropicServer.lastUserText(request.body)}`), { HISTORY_KEEP: "2", HISTORY_MAX: "100" })
      fs.mkdirSync(t.memory)
      fs.writeFileSync(path.join(t.memory, "history.jsonl"), history(4))
      const running = yield* Cli.start(["run"], { cwd: t.cwd, env: t.env })
      yield* running.write("before\n")
      yield* running.lines(1)
      const compacted = yield* Cli.run(["compact"], { cwd: t.cwd, env: t.env })
      expect(compacted.stderr).not.toMatch(/warn|error/)
      expect(compacted.code).toBe(0)
      expect(compacted.stdout).toContain("summarised 4 lines")
      yield* running.write("after\n")
      expect(yield* running.lines(2)).toEqual(["re: before", "re: after"])
      yield* running.closeInput
      expect((yield* running.done).code).toBe(0)
      expect(t.read("summary.md")).toBe("Summary.\n")
      expect(t.read("history.jsonl")).toBe(
        line("user", "before") + line("assistant", "re: before") + line("user", "after") +
          line("assistant", "re: after")
      )
    })))
})

describe("planckclaw tools / --version / --help", () => {
  it.live("lists the shipped tools and every declaration it skipped, with why", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("unused")))
      const claws = t.claws
      for (const name of fs.readdirSync(path.join(Cli.REPO, "claws"))) {
        fs.copyFileSync(path.join(Cli.REPO, "claws", name), path.join(claws, name))
      }
      fs.writeFileSync(path.join(claws, "broken.sh"), "#!/bin/sh\n#TOOLS:{\"name\":\"bad name!\"}\n#TOOLS:{oops\n")
      const result = yield* Cli.run(["tools"], { cwd: t.cwd, env: { ...t.env, CLAWS_DIR: claws } })
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/get_time/)
      expect(result.stdout).toMatch(/roll_dice/)
      expect(result.stdout).toMatch(/system_status/)
      expect(result.stdout).toContain("broken.sh:2")
      expect(result.stdout).toContain("broken.sh:3")
    }))

  it.live("prints its version and help", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("unused")))
      const version = yield* Cli.run(["--version"], { cwd: t.cwd, env: t.env })
      const pkg = JSON.parse(fs.readFileSync(path.join(Cli.REPO, "package.json"), "utf8")) as { version: string }
      expect(version.stdout.trim()).toBe(pkg.version)
      const help = yield* Cli.run(["run", "--help"], { cwd: t.cwd, env: t.env })
      expect(help.code).toBe(0)
      expect(help.stdout).toContain("--bridge")
      expect(help.stdout).toContain("--brain")
      expect(help.stdout).toContain("--claw")
    }))
})

describe("planckclaw run --bridge discord (built command)", () => {
  const botUserId = "100000000000000001"
  const channel = "200000000000000001"
  const alice = "300000000000000001"
  const token = "fake-discord-token-for-tests"

  it.live("answers a Discord message in its channel through the pipes, and stops cleanly on SIGTERM", () =>
    Effect.gen(function*() {
      const fake = yield* FakeDiscord.make({ token, botUserId, guildId: "400000000000000001", channelIds: [channel] })
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("Hello from the agent, Alice.")), {
        DISCORD_BOT_TOKEN: token,
        DISCORD_CHANNEL_ID: channel,
        DISCORD_API_URL: fake.apiUrl,
        PLANCKCLAW_DEBUG: "1"
      })
      const running = yield* Cli.start(["run", "--bridge", "discord"], { cwd: t.cwd, env: t.env })
      yield* fake.waitFor(() => fake.gateway().find((record) => "op" in record && record.op === 2) ? true : undefined)
      yield* fake.messageCreate({ channelId: channel, authorId: alice, content: `<@${botUserId}> hi there` })
      const post = yield* fake.waitFor(() =>
        fake.rest().find((record) => record.method === "POST" && record.path === `/api/v10/channels/${channel}/messages`)
      )
      expect(post.body).toMatchObject({ content: "Hello from the agent, Alice." })
      const [request] = yield* t.server.awaitRequests(1)
      expect(request!.body.messages).toEqual([{ role: "user", content: "hi there" }])

      running.process.kill("SIGTERM")
      const result = yield* running.done
      expect(result.code).toBe(0)
      expect(fs.existsSync(path.join(t.cwd, "run"))).toBe(false)
      // Debug mode prints payloads and statuses, never the secrets.
      expect(result.stderr + result.stdout).not.toContain(token)
      expect(result.stderr + result.stdout).not.toContain("test-key-not-secret")
      expect(t.read("history.jsonl")).toBe(line("user", "hi there") + line("assistant", "Hello from the agent, Alice."))
    }))
})
