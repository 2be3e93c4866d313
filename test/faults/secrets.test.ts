/**
 * Secrets: the API key and the bot token never show in any output, log,
 * file or claw environment, even in debug mode and even when the API echoes
 * the key back; each external bridge gets only the secret it needs; and what
 * the agent creates on disk is readable by its owner only.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Result, Effect } from "effect"
import { misconfiguredReply } from "../../src/agent/Turn.js"
import {
  apiError,
  make as brainServer,
  type Handler,
  isCompaction,
  lastUserText,
  text,
  toolUse
} from "../support/AnthropicServer.js"
import { tool } from "../support/Sandbox.js"
import { eventually } from "./Bounds.js"
import { FAKE_KEY, FAKE_TOKEN, sandbox } from "./Campaign.js"
import { connectTo } from "./FifoClient.js"
import { planckclaw, planckclawToEnd, strays } from "./Processes.js"

const TIMEOUT = 120_000

/** Every regular file under `dir` that mentions `secret`, except those in `expected`. */
const filesMentioning = (dir: string, secret: string, expected: ReadonlyArray<string> = []): Array<string> =>
  fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).flatMap((entry) => {
    const file = path.join(dir, entry)
    const stat = fs.lstatSync(file)
    if (!stat.isFile() || expected.includes(file)) return []
    return fs.readFileSync(file, "utf8").includes(secret) ? [file] : []
  })

const mode = (file: string) => (fs.statSync(file).mode & 0o777).toString(8)

const dumpEnv = (name: string) => `tr '\\0' '\\n' < /proc/$$/environ > "$D/${name}"\n`

describe("faults: secrets", () => {
  it.live("secrets: debug mode, an API echoing the key, a claw dumping its env → the key and token appear nowhere", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      box.claw("envdump.sh", `${tool("envdump")}\nenv > "$D/claw-env.txt"\n${dumpEnv("claw-environ.txt")}echo dumped\n`)
      // What an API or a proxy might echo: the credentials it was sent.
      const echoKey = (request: { readonly headers: Readonly<Record<string, string>> }) =>
        `your key ${request.headers["x-api-key"]} is wrong`
      let turns = 0
      const handler: Handler = (request) => {
        if (isCompaction(request)) return text("The user said hello twice.")
        switch (turns++) {
          case 0:
            return apiError(500, "api_error", echoKey(request))
          case 1:
            return toolUse([{ id: "tu_1", name: "envdump", input: {} }])
          case 2:
            return text("re: first")
          default:
            return apiError(401, "authentication_error", echoKey(request))
        }
      }
      const server = yield* brainServer(handler)
      const env = box.envWith({
        ANTHROPIC_BASE_URL: server.url,
        DISCORD_BOT_TOKEN: FAKE_TOKEN,
        // The key under a name no one would think of, and inside longer values: still withheld from claws.
        SOME_COPY_OF_THE_KEY: FAKE_KEY,
        KEY_IN_A_HEADER: `Bearer ${FAKE_KEY}`,
        PROXY_WITH_THE_TOKEN: `https://bot:${FAKE_TOKEN}@proxy.invalid:8080`,
        NOTHING_SECRET: "an ordinary value",
        PLANCKCLAW_BRAIN_RETRIES: "1",
        HISTORY_MAX: "1",
        HISTORY_KEEP: "0"
      })
      const run = yield* planckclawToEnd(box, ["run", "--debug"], env, "first\nsecond\n")
      // Piped, and one reply said the brain could not answer: exit 3.
      expect(run.code, run.stderr).toBe(3)
      // A 401 is a refused key: the misconfigured reply, not the apology.
      // The first reply begins with what the model wrote before its tool call.
      expect(run.stdout).toBe(`Let me check.\n\nre: first\n${misconfiguredReply("the API key was refused")}\n`)
      // Debug output is really on, and the key it would show is redacted.
      expect(run.stderr).toContain("[planckclaw brain] request {")
      expect(run.stderr).toContain("x-api-key: <redacted>")
      expect(run.stderr).toContain("your key <redacted>")

      fs.appendFileSync(path.join(box.memory, "history.jsonl"), `${JSON.stringify({ role: "user", content: "x" })}\n`.repeat(2))
      const compact = yield* planckclawToEnd(box, ["compact", "--debug"], env)
      expect(compact.code, compact.stderr).toBe(0)
      expect(compact.stderr).toContain("[planckclaw brain]")
      const tools = yield* planckclawToEnd(box, ["tools"], { ...env, PLANCKCLAW_DEBUG: "1" })
      expect(tools.stdout).toContain("envdump")

      expect((yield* server.requests).every((request) => request.headers["x-api-key"] === FAKE_KEY)).toBe(true)
      for (const secret of [FAKE_KEY, FAKE_TOKEN]) {
        for (const output of [run.stdout, run.stderr, compact.stdout, compact.stderr, tools.stdout, tools.stderr]) {
          expect(output).not.toContain(secret)
        }
        expect(filesMentioning(box.dir, secret)).toEqual([])
      }
      // The claw ran, and its environment was scrubbed by name and by value.
      const clawEnv = fs.readFileSync(box.path("claw-environ.txt"), "utf8")
      expect(clawEnv).toContain("PLANCKCLAW_DIR=")
      expect(clawEnv).not.toMatch(/ANTHROPIC_API_KEY|DISCORD_BOT_TOKEN|SOME_COPY_OF_THE_KEY|KEY_IN_A_HEADER|PROXY_WITH_THE_TOKEN/)
      expect(clawEnv).toContain("NOTHING_SECRET=an ordinary value")
      expect(box.memoryFile("summary.md")).toBe("The user said hello twice.\n")
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)

  it.live("secrets: external bridges → the brain gets only the key, the interact bridge only the token, a claw bridge neither", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const brain = box.script(
        "ext-brain.sh",
        dumpEnv("brain-env.txt") +
          `while IFS= read -r line; do\n  [ -z "$line" ] && continue\n` +
          `  printf '%s\\n\\n' '{"content":[{"type":"text","text":"from the external brain"}],"stop_reason":"end_turn"}' > "$PLANCKCLAW_BRAIN_OUT"\n` +
          `done < "$PLANCKCLAW_BRAIN_IN"\n`
      )
      const claw = box.script(
        "ext-claw.sh",
        dumpEnv("claw-bridge-env.txt") +
          `while IFS= read -r line; do\n  case "$line" in\n    __list_tools__) printf '[]\\n\\n' > "$PLANCKCLAW_CLAW_OUT" ;;\n` +
          `    ?*) printf 'ok\\n\\n' > "$PLANCKCLAW_CLAW_OUT" ;;\n  esac\ndone < "$PLANCKCLAW_CLAW_IN"\n`
      )
      const interact = box.script(
        "ext-interact.sh",
        dumpEnv("interact-env.txt") +
          `printf 'ext\\thello\\n' > "$PLANCKCLAW_INTERACT_IN"\nIFS= read -r reply < "$PLANCKCLAW_INTERACT_OUT"\n` +
          `printf '%s\\n' "$reply" > "$D/reply.txt"\n`
      )
      const env = box.envWith({ DISCORD_BOT_TOKEN: FAKE_TOKEN, PLANCKCLAW_DEBUG: "1" })
      const result = yield* planckclawToEnd(box, ["run", "--bridge", interact, "--brain", brain, "--claw", claw], env)
      expect(result.code, result.stderr).toBe(0)
      expect(fs.readFileSync(box.path("reply.txt"), "utf8")).toBe("ext\tfrom the external brain\n")
      const brainEnv = fs.readFileSync(box.path("brain-env.txt"), "utf8")
      const interactEnv = fs.readFileSync(box.path("interact-env.txt"), "utf8")
      const clawEnv = fs.readFileSync(box.path("claw-bridge-env.txt"), "utf8")
      expect(brainEnv).toContain(`ANTHROPIC_API_KEY=${FAKE_KEY}`)
      expect(brainEnv).not.toContain(FAKE_TOKEN)
      expect(interactEnv).toContain(`DISCORD_BOT_TOKEN=${FAKE_TOKEN}`)
      expect(interactEnv).not.toContain(FAKE_KEY)
      expect(clawEnv).not.toContain(FAKE_KEY)
      expect(clawEnv).not.toContain(FAKE_TOKEN)
      for (const secret of [FAKE_KEY, FAKE_TOKEN]) {
        expect(result.stdout + result.stderr).not.toContain(secret)
        expect(filesMentioning(box.dir, secret, [box.path("brain-env.txt"), box.path("interact-env.txt")])).toEqual([])
      }
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)

  it.live("secrets: under umask 000 → runtime directory 0700, FIFOs and pid file 0600, memory directory 0700, memory files 0600", () =>
    Effect.gen(function*() {
      const box = yield* sandbox()
      const handler: Handler = (request) =>
        isCompaction(request) ? text("A summary.") : text(`re: ${lastUserText(request.body)}`)
      const server = yield* brainServer(handler)
      const proc = yield* planckclaw(
        box,
        ["run", "--bridge", "none"],
        box.envWith({ ANTHROPIC_BASE_URL: server.url, HISTORY_MAX: "2", HISTORY_KEEP: "1" }),
        { stdin: "ignore", umask: "000" }
      )
      const client = yield* connectTo(proc, box.runDir)
      expect(mode(box.runDir)).toBe("700")
      for (const entry of fs.readdirSync(box.runDir)) expect([entry, mode(path.join(box.runDir, entry))]).toEqual([entry, "600"])
      expect(fs.readdirSync(box.runDir).sort()).toEqual(
        // The run serves the brain and the claws itself (--bridge none leaves the terminal's role to others): it claims those two.
        ["brain-bridge.pid", "brain_in", "brain_out", "claw-bridge.pid", "claw_in", "claw_out", "interact_in", "interact_out", "planckclaw.pid"]
      )
      yield* client.send("one")
      yield* client.reply
      yield* client.send("two")
      yield* client.reply
      yield* eventually("summary.md", () => (fs.existsSync(path.join(box.memory, "summary.md")) ? true : undefined))
      expect(mode(box.memory)).toBe("700")
      const files = fs.readdirSync(box.memory)
      expect(files).toEqual(expect.arrayContaining(["history.jsonl", "summary.md", ".inbox.jsonl", ".planckclaw-run.lock"]))
      // Locks come and go; whatever is there when looked at must be owner-only.
      for (const entry of files) {
        const stat = Result.try(() => fs.statSync(path.join(box.memory, entry)))
        if (Result.isSuccess(stat)) expect([entry, (stat.success.mode & 0o777).toString(8)]).toEqual([entry, "600"])
      }
      yield* proc.signal("SIGTERM")
      expect((yield* proc.ended).code).toBe(0)
      expect(yield* strays(box)).toEqual([])
    }), TIMEOUT)
})
