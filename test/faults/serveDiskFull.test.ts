/**
 * A full disk under `serve`'s agents, for real (as diskFull.test.ts does for
 * `run`): a small tmpfs mounted on the agents directory (we may be root),
 * else a file size limit of 0 on the running serve (RLIMIT_FSIZE, writes
 * that grow a file fail with EFBIG). `PLANCKCLAW_TEST_DISK=rlimit` forces it.
 *
 * What is answered while the disk is full must be true: `stored: true` only
 * for an exchange on disk (history, or the inbox journal with its reply), a
 * message the journal cannot take is refused with 507 naming the full disk.
 * A clean SIGTERM and a restart with room lose nothing acknowledged, and a
 * retry under the same Idempotency-Key runs no second turn for it.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Data, Effect, type Scope } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import { eventually, type Sandbox } from "../support/Sandbox.js"
import { sandbox } from "./Campaign.js"
import { planckclaw } from "./Processes.js"

const TIMEOUT = 120_000
const forced = process.env["PLANCKCLAW_TEST_DISK"] === "rlimit"
const run = (command: string, args: ReadonlyArray<string>) => child.spawnSync(command, args, { encoding: "utf8" })

class FetchFailed extends Data.TaggedError("FetchFailed")<{ readonly message: string }> {}

interface Answer {
  readonly status: number
  readonly body: { readonly reply?: string; readonly stored?: boolean; readonly error?: string; readonly message?: string }
}

const post = (base: string, id: string, text: string, key: string) =>
  Effect.tryPromise({
    try: async (): Promise<Answer> => {
      const response = await fetch(`${base}/v1/agents/${id}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ text })
      })
      return { status: response.status, body: await response.json() as Answer["body"] }
    },
    catch: (error) => new FetchFailed({ message: String(error) })
  })

/** The agents directory on a tmpfs of `kib` KiB for the scope; false where mounting is not allowed. */
const tmpfs = (dir: string, kib: number): Effect.Effect<boolean, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      return !forced && run("mount", ["-t", "tmpfs", "-o", `size=${kib}k,mode=0700`, "tmpfs", dir]).status === 0
    }),
    (mounted) => Effect.sync(() => void (mounted && run("umount", ["-l", dir])))
  )

/** Fills the tmpfs at `mount` until exactly `pages` pages are left. */
const fillTmpfs = (mount: string, pages: number) => {
  const filler = path.join(mount, "filler")
  fs.writeFileSync(filler, "")
  for (let attempt = 0; attempt < 50 && fs.statfsSync(mount).bavail !== pages; attempt++) {
    const stats = fs.statfsSync(mount)
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, fs.statSync(filler).size + (stats.bavail - pages) * stats.bsize)))
  }
  expect(fs.statfsSync(mount).bavail).toBe(pages)
}

const line = (role: string, content: string) => `${JSON.stringify({ role, content })}\n`

/** History of exactly two pages: any append needs a page of its own. */
const SEED = (() => {
  const base = line("user", "old") + line("assistant", "")
  const pad = 8192 - base.length
  return line("user", "old") + line("assistant", "x".repeat(pad))
})()

const serve = (box: Sandbox, env: NodeJS.ProcessEnv) =>
  Effect.gen(function*() {
    const proc = yield* planckclaw(box, ["serve", "--http", "127.0.0.1:0"], env, { stdin: "ignore" })
    const listening = yield* proc.awaitStderr(/HTTP API on 127\.0\.0\.1:(\d+)/)
    return { proc, base: `http://127.0.0.1:${/HTTP API on 127\.0\.0\.1:(\d+)/.exec(listening)![1]}` }
  })

const userLines = (history: string) =>
  history.split("\n").filter((raw) => raw.length > 0).map((raw) => JSON.parse(raw) as { role: string; content: string })
    .filter((entry) => entry.role === "user").map((entry) => entry.content)

describe("faults: a full disk under serve's agents", () => {
  it.live("answers truthfully while full; a clean stop and a restart lose nothing acknowledged; a retry runs no second turn", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const box = yield* sandbox({ ANTHROPIC_BASE_URL: server.url })
      const agents = box.path("agents")
      const mounted = yield* tmpfs(agents, 512)
      fs.mkdirSync(path.join(agents, "full"), { mode: 0o700 })
      fs.writeFileSync(path.join(agents, "full", "history.jsonl"), SEED, { mode: 0o600 })
      const env = box.envWith({ PLANCKCLAW_AGENTS_DIR: agents })

      const first = yield* serve(box, env)
      // Another agent first: the host's owner file (its locks link to it) is made while there is room.
      expect((yield* post(first.base, "warm", "hello", "w-1")).body).toEqual({ reply: "re: hello", stored: true })
      // One page left: the journal takes it, with room for a message or so; history and the key file get none.
      if (mounted) fillTmpfs(agents, 1)
      else expect(run("prlimit", ["--pid", String(first.proc.pid), "--fsize=0:"]).status).toBe(0)

      const texts = Array.from({ length: 5 }, (_, n) => `full ${n} ${"y".repeat(1000)}`)
      const answers: Array<Answer> = []
      for (const [n, text] of texts.entries()) answers.push(yield* post(first.base, "full", text, `k-${n}`))
      for (const [n, answer] of answers.entries()) {
        if (answer.status === 200) {
          expect(answer.body.reply).toBe(`re: ${texts[n]}`)
        } else {
          // Refused before any turn, saying why.
          expect(answer.status, JSON.stringify(answer.body)).toBe(507)
          expect(answer.body.error).toBe("no-space")
          expect(answer.body.message).toMatch(/disk is full/)
          expect(answer.body.message).toContain("nothing was processed")
        }
      }
      // Once the journal has no room, the messages are refused: the disk really was full for them.
      expect(answers.at(-1)!.status).toBe(507)
      // On the tmpfs, exactly: the first exchange fits in the journal's page (stored: true, on disk there); the
      // second's message does, its reply no longer (stored: false); then no message fits (507).
      expect(answers.map((answer) => [answer.status, answer.body.stored ?? answer.body.error])).toEqual(
        mounted ? [[200, true], [200, false], ...texts.slice(2).map(() => [507, "no-space"])] : texts.map(() => [507, "no-space"])
      )
      const acknowledged = texts.filter((_, n) => answers[n]!.status === 200 && answers[n]!.body.stored === true)
      const unkept = texts.filter((_, n) => answers[n]!.status === 200 && answers[n]!.body.stored === false)
      if (mounted) expect(acknowledged.length).toBeGreaterThan(0)

      yield* first.proc.signal("SIGTERM")
      const ended = yield* first.proc.ended
      expect(ended.code, first.proc.stderr()).toBe(0)
      // What the stop cannot keep is said, not left silent: here the message is in the journal, its reply not.
      if (unkept.length > 0) expect(first.proc.stderr()).toMatch(/1 keep only their message, which the next start answers again/)

      if (mounted) fs.unlinkSync(path.join(agents, "filler"))
      const second = yield* serve(box, env)
      const history = () => fs.readFileSync(path.join(agents, "full", "history.jsonl"), "utf8")
      // Everything acknowledged is stored by the restart (an exchange in the journal, answered or not yet).
      yield* eventually("the acknowledged exchanges to be stored", () =>
        acknowledged.every((text) => userLines(history()).includes(text)) ? true : undefined)

      for (const [n, text] of texts.entries()) {
        const retried = yield* post(second.base, "full", text, `k-${n}`)
        expect(retried.status, JSON.stringify(retried.body)).toBe(200)
        if (acknowledged.includes(text)) expect(retried.body).toEqual({ reply: `re: ${text}`, stored: true })
      }
      // No second turn for what was acknowledged (answered from the key's record), nor for a refused message
      // (its first turn is the retry's); one answered `stored: false` may have been answered again at the restart.
      const turns = yield* server.turns
      const turnsOf = (text: string) => turns.filter((request) => AnthropicServer.lastUserText(request.body) === text).length
      for (const [n, text] of texts.entries()) {
        expect(turnsOf(text), text.slice(0, 6)).toBe(unkept.includes(text) ? 2 : 1)
        expect(answers[n]!.status === 507 || turnsOf(text) >= 1).toBe(true)
      }
      // Each message once in history, in order, after the seed.
      expect(userLines(history())).toEqual(["old", ...texts])
      expect(fs.readFileSync(path.join(agents, "full", ".inbox.jsonl"), "utf8")).toBe("")
      yield* second.proc.signal("SIGTERM")
      expect((yield* second.proc.ended).code).toBe(0)
    }), TIMEOUT)
})
