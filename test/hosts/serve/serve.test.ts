/**
 * End to end: the built `planckclaw serve`, as a child process, over real
 * HTTP on loopback, against an Anthropic-compatible server on loopback.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Data, Effect, Fiber } from "effect"
import * as AnthropicServer from "../../support/AnthropicServer.js"
import * as Cli from "../../support/Cli.js"
import { line } from "../../support/Harness.js"
import { eventually, exited, sandbox } from "../../support/Sandbox.js"

class FetchFailed extends Data.TaggedError("FetchFailed")<{ readonly message: string }> {}

interface Answer {
  readonly status: number
  readonly body: any
}

const request = (url: string, init: RequestInit = {}) =>
  Effect.tryPromise({
    try: async (): Promise<Answer> => {
      const response = await fetch(url, init)
      const text = await response.text()
      return { status: response.status, body: text.length > 0 ? JSON.parse(text) : undefined }
    },
    catch: (error) => new FetchFailed({ message: String(error) })
  })

const post = (base: string, id: string, text: string, headers: Record<string, string> = {}) =>
  request(`${base}/v1/agents/${id}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ text })
  })

/** A POST to `rawPath` exactly as written: node:http, unlike fetch, leaves `..` in the path. */
const unnormalised = (base: string, rawPath: string, body: string) =>
  Effect.callback<Answer, FetchFailed>((resume) => {
    const sent = http.request(`${base}${rawPath}`, { method: "POST", path: rawPath, headers: { "content-type": "application/json" } }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resume(Effect.succeed({ status: response.statusCode ?? 0, body: text.length > 0 ? JSON.parse(text) : undefined }))
      })
    })
    sent.on("error", (error) => resume(Effect.fail(new FetchFailed({ message: String(error) }))))
    sent.end(body)
  })

/** A sandbox whose brain is a loopback server answering with `handler`; agents under `agents/`. */
const setup = (handler: AnthropicServer.Handler, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* AnthropicServer.make(handler)
    const box = yield* sandbox({
      ANTHROPIC_API_KEY: "test-key-not-secret",
      ANTHROPIC_BASE_URL: server.url,
      ...extra
    }, "planckclaw-serve-")
    const agents = box.path("agents")
    const history = (id: string) => {
      const file = path.join(agents, id, "history.jsonl")
      return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
    }
    return { server, box, agents, history, env: box.envWith({ PLANCKCLAW_AGENTS_DIR: agents }) }
  })

/** Starts `serve` on a free loopback port; its base URL once it says where it listens. */
const startServe = (cwd: string, env: NodeJS.ProcessEnv, args: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const running = yield* Cli.start(["serve", "--http", "127.0.0.1:0", ...args], { cwd, env })
    const stderr = () => Effect.runSync(running.stderrSoFar)
    const port = yield* eventually("serve to say where it listens", () => /HTTP API on 127\.0\.0\.1:(\d+)/.exec(stderr())?.[1])
    return { running, base: `http://127.0.0.1:${port}` }
  })

describe("planckclaw serve (built command)", () => {
  it.live("answers twelve agents at once over HTTP, each in order, lists them, and exits 0 on SIGTERM", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo)
      const { running, base } = yield* startServe(t.box.dir, t.env)
      const ids = ["alice", "bob", "carol", ...Array.from({ length: 9 }, (_, n) => `agent-${n}`)].sort()
      const answers = yield* Effect.forEach(ids, (id) =>
        Effect.forEach(["one", "two"], (n) => post(base, id, `${id} ${n}`)), { concurrency: "unbounded" })
      answers.forEach((perAgent, index) =>
        perAgent.forEach((answer, n) =>
          expect(answer).toEqual({ status: 200, body: { reply: `re: ${ids[index]} ${["one", "two"][n]}`, stored: true } })
        )
      )
      for (const id of ids) {
        expect(t.history(id)).toBe(
          line("user", `${id} one`) + line("assistant", `re: ${id} one`) +
            line("user", `${id} two`) + line("assistant", `re: ${id} two`)
        )
      }
      const listed = yield* request(`${base}/v1/agents`)
      expect(listed.status).toBe(200)
      expect(listed.body.agents.map((agent: any) => [agent.id, agent.historyLines])).toEqual(ids.map((id) => [id, 4]))

      running.process.kill("SIGTERM")
      const result = yield* running.done
      expect(result.code).toBe(0)
      expect(result.stderr).not.toContain("test-key-not-secret")
      expect(result.stderr).not.toContain("can be written by other users")
    }))

  it.live("with PLANCKCLAW_HTTP_TOKEN, a request without the header gets 401 and touches no memory", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo, { PLANCKCLAW_HTTP_TOKEN: "s3cret-token" })
      const { base } = yield* startServe(t.box.dir, t.env)
      const refused = yield* post(base, "alice", "hi")
      expect(refused.status).toBe(401)
      expect(fs.existsSync(path.join(t.agents, "alice"))).toBe(false)
      expect((yield* request(`${base}/v1/health`)).status).toBe(200)
      const allowed = yield* post(base, "alice", "hi", { authorization: "Bearer s3cret-token" })
      expect(allowed).toEqual({ status: 200, body: { reply: "re: hi", stored: true } })
    }))

  it.live("an Idempotency-Key retried gets the same reply without a second turn, also after a restart", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo)
      const first = yield* startServe(t.box.dir, t.env)
      const key = { "idempotency-key": "order-42" }
      const answer = yield* post(first.base, "alice", "buy milk", key)
      expect(answer).toEqual({ status: 200, body: { reply: "re: buy milk", stored: true } })
      expect(yield* post(first.base, "alice", "buy milk", key)).toEqual(answer)
      // The key is per agent: bob's first message with it is a turn of its own.
      expect(yield* post(first.base, "bob", "buy bread", key)).toEqual({ status: 200, body: { reply: "re: buy bread", stored: true } })
      first.running.process.kill("SIGTERM")
      expect((yield* first.running.done).code).toBe(0)

      const second = yield* startServe(t.box.dir, t.env)
      expect(yield* post(second.base, "alice", "buy milk", key)).toEqual(answer)
      expect((yield* t.server.turns).length).toBe(2)
      expect(t.history("alice")).toBe(line("user", "buy milk") + line("assistant", "re: buy milk"))
    }))

  it.live("an agent is answered by one process at a time: a second serve and a run on it are refused until the first lets go", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo)
      const first = yield* startServe(t.box.dir, t.env)
      expect(yield* post(first.base, "alice", "one")).toEqual({ status: 200, body: { reply: "re: one", stored: true } })
      const pid = first.running.process.pid

      // A second serve on the same agents: alice is the first one's; bob is free.
      const second = yield* startServe(t.box.dir, t.env)
      const refused = yield* post(second.base, "alice", "two")
      expect(refused.status).toBe(503)
      expect(refused.body.message).toBe(`agent alice: another planckclaw process (pid ${pid}) is using ${path.join(t.agents, "alice")}`)
      expect(yield* post(second.base, "bob", "hi")).toEqual({ status: 200, body: { reply: "re: hi", stored: true } })
      // A run pointed at alice's directory.
      const run = yield* Cli.run(["run"], { cwd: t.box.dir, env: { ...t.env, PLANCKCLAW_DIR: path.join(t.agents, "alice") }, input: "three\n" })
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(`another planckclaw (pid ${pid}: a run, or a serve that started this agent) is using the memory directory`)
      expect(t.history("alice")).toBe(line("user", "one") + line("assistant", "re: one"))

      // The first stops (its agents let go): the second answers alice now.
      first.running.process.kill("SIGTERM")
      expect((yield* first.running.done).code).toBe(0)
      expect(yield* post(second.base, "alice", "two")).toEqual({ status: 200, body: { reply: "re: two", stored: true } })
      expect(t.history("alice")).toBe(line("user", "one") + line("assistant", "re: one") + line("user", "two") + line("assistant", "re: two"))
    }))

  it.live("refuses bad input with a JSON error and the right status, touching no memory", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo, { PLANCKCLAW_MAX_MESSAGE_BYTES: "100" })
      const { base } = yield* startServe(t.box.dir, t.env)
      const raw = (id: string, body: string) =>
        request(`${base}/v1/agents/${id}/messages`, { method: "POST", headers: { "content-type": "application/json" }, body })
      const cases: ReadonlyArray<readonly [string, Effect.Effect<Answer, FetchFailed>, number]> = [
        ["malformed JSON", raw("alice", "{\"text\": "), 400],
        ["missing text", raw("alice", JSON.stringify({ channel: "x" })), 400],
        ["text not a string", raw("alice", JSON.stringify({ text: 7 })), 400],
        ["an id of .. (sent as is: fetch would resolve it)", unnormalised(base, "/v1/agents/../messages", JSON.stringify({ text: "hi" })), 400],
        ["an id of .. percent-encoded", unnormalised(base, "/v1/agents/%2E%2E/messages", JSON.stringify({ text: "hi" })), 400],
        ["an id with a slash", post(base, "a%2Fb", "hi"), 400],
        ["an upper-case id", post(base, "Alice", "hi"), 400],
        ["a message over PLANCKCLAW_MAX_MESSAGE_BYTES", post(base, "alice", "x".repeat(101)), 413],
        ["an unknown route", request(`${base}/v1/nothing-here`), 404],
        ["an unknown agent", request(`${base}/v1/agents/nobody`), 404]
      ]
      for (const [what, sent, status] of cases) {
        const answer = yield* sent
        expect({ what, status: answer.status }).toEqual({ what, status })
        expect(typeof answer.body?.error, what).toBe("string")
        expect(typeof answer.body?.message, what).toBe("string")
      }
      expect(fs.existsSync(t.agents) ? fs.readdirSync(t.agents).filter((name) => !name.startsWith(".")) : []).toEqual([])
      expect((yield* t.server.turns).length).toBe(0)
      // Still serving after all that.
      expect(yield* post(base, "alice", "x".repeat(100))).toEqual({ status: 200, body: { reply: `re: ${"x".repeat(100)}`, stored: true } })
    }))

  it.live("warns when other users can write the agents directory or an agent's, and serves anyway", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo)
      fs.mkdirSync(path.join(t.agents, "shared"), { recursive: true })
      fs.chmodSync(t.agents, 0o777)
      fs.chmodSync(path.join(t.agents, "shared"), 0o770)
      const { running, base } = yield* startServe(t.box.dir, t.env)
      const stderr = () => Effect.runSync(running.stderrSoFar)
      expect(stderr()).toMatch(/PLANCKCLAW_AGENTS_DIR \S+ can be written by other users \(mode 0777\): .*chmod 700/)
      expect((yield* post(base, "shared", "hi")).status).toBe(200)
      expect(stderr()).toMatch(/agent directory \S+shared can be written by other users \(mode 0770\)/)
      running.process.kill("SIGTERM")
      expect((yield* running.done).code).toBe(0)
    }))

  it.live("refuses a non-loopback address without a token, a token of spaces, and a bad --http, in one line with exit 2", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.echo)
      const open = yield* Cli.run(["serve", "--http", "0.0.0.0:0"], { cwd: t.box.dir, env: t.env })
      expect(open.code).toBe(2)
      expect(open.stderr).toMatch(/^planckclaw: refusing to listen on 0\.0\.0\.0.*PLANCKCLAW_HTTP_TOKEN.*\n$/)
      // A token of spaces would lock everyone out: refused, naming the setting.
      const blank = yield* Cli.run(["serve", "--http", "0.0.0.0:0"], { cwd: t.box.dir, env: { ...t.env, PLANCKCLAW_HTTP_TOKEN: "   " } })
      expect(blank.code).toBe(2)
      expect(blank.stderr).toMatch(/^planckclaw: configuration error: PLANCKCLAW_HTTP_TOKEN: is only white space[^\n]*\n$/)
      const bad = yield* Cli.run(["serve", "--http", "localhost"], { cwd: t.box.dir, env: t.env })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toMatch(/^planckclaw: --http expects HOST:PORT.*\n$/)
      expect(fs.existsSync(t.agents)).toBe(false)
    }))

  it.live("after a SIGKILL with turns in flight for two agents, a restart answers each accepted message once", () =>
    Effect.gen(function*() {
      // The first two turns are slow: serve is killed while both wait for the brain.
      const t = yield* setup((request, index) =>
        index < 2 ? AnthropicServer.delay(30_000, AnthropicServer.echo(request, index)) : AnthropicServer.echo(request, index)
      )
      const first = yield* startServe(t.box.dir, t.env)
      const pending = yield* Effect.forkChild(
        Effect.forEach(["alice", "bob"], (id) => Effect.result(post(first.base, id, `${id} first`)), { concurrency: "unbounded" })
      )
      yield* t.server.awaitRequests(2)
      first.running.process.kill("SIGKILL")
      yield* exited("the killed serve", first.running.process.pid!)
      // The clients of the killed process get no reply.
      const lost = yield* Fiber.join(pending)
      expect(lost.map((answer) => answer._tag)).toEqual(["Failure", "Failure"])

      const second = yield* startServe(t.box.dir, t.env)
      for (const id of ["alice", "bob"]) {
        const expected = line("user", `${id} first`) + line("assistant", `re: ${id} first`)
        yield* eventually(`${id}'s recovered message to be answered`, () => (t.history(id) === expected ? true : undefined))
      }
      // A next message follows the recovered one; nothing was answered twice.
      const next = yield* post(second.base, "alice", "alice second")
      expect(next).toEqual({ status: 200, body: { reply: "re: alice second", stored: true } })
      expect(t.history("alice")).toBe(
        line("user", "alice first") + line("assistant", "re: alice first") +
          line("user", "alice second") + line("assistant", "re: alice second")
      )
      expect(t.history("bob")).toBe(line("user", "bob first") + line("assistant", "re: bob first"))
      const turns = yield* t.server.turns
      expect(turns.map((turn) => AnthropicServer.lastUserText(turn.body)).sort()).toEqual([
        "alice first", "alice first", "alice second", "bob first", "bob first"
      ])
    }))
})

describe("planckclaw compact --agent (built command)", () => {
  it.live("compacts one agent's directory with its own settings, and refuses a bad id with exit 2", () =>
    Effect.gen(function*() {
      const t = yield* setup(AnthropicServer.replies(AnthropicServer.text("A tidy summary.")))
      const dir = path.join(t.agents, "alice")
      fs.mkdirSync(dir, { recursive: true })
      // The agent's own config.env keeps 2 lines; the host's default would keep them all.
      fs.writeFileSync(path.join(dir, "config.env"), "HISTORY_KEEP=2\n")
      const lines = Array.from({ length: 6 }, (_, i) => line(i % 2 === 0 ? "user" : "assistant", `m${i}`)).join("")
      fs.writeFileSync(path.join(dir, "history.jsonl"), lines)
      const result = yield* Cli.run(["compact", "--agent", "alice"], { cwd: t.box.dir, env: t.env })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("Compacted: summarised 4 lines")
      expect(t.history("alice")).toBe(line("user", "m4") + line("assistant", "m5"))
      expect(fs.readFileSync(path.join(dir, "summary.md"), "utf8")).toBe("A tidy summary.\n")
      expect(fs.existsSync(t.box.memory)).toBe(false)

      const bad = yield* Cli.run(["compact", "--agent", "../alice"], { cwd: t.box.dir, env: t.env })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toMatch(/^planckclaw: agent id "\.\.\/alice" is not allowed.*\n$/)
      const missing = yield* Cli.run(["compact", "--agent", "nobody"], { cwd: t.box.dir, env: t.env })
      expect(missing.code).toBe(1)
      expect(missing.stderr).toMatch(/^planckclaw: no agent nobody.*\n$/)
    }))
})
