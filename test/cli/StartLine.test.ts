/**
 * An interactive start of `planckclaw run` (the built command in a real
 * pseudo-terminal, under util-linux `script`) prints one line before the
 * hint: the home, the brain and its address, the model and how many tools
 * the claws declare. A piped run prints nothing of it: its stdout is replies.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { eventually, tempDir } from "../support/Sandbox.js"

const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`
// eslint-disable-next-line no-control-regex
const ESCAPES = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[\]PX^_][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[()][0-9A-Za-z]|\u001b[=>]/g

const setup = Effect.gen(function*() {
  const server = yield* AnthropicServer.make(AnthropicServer.echo)
  const dir = fs.realpathSync(yield* tempDir("planckclaw-start-line-"))
  const home = path.join(dir, "home")
  fs.mkdirSync(path.join(home, "claws"), { recursive: true })
  // Two of the shipped claws: the count is the catalogue's, not a constant.
  for (const claw of ["time.sh", "dice.sh"]) {
    fs.copyFileSync(path.join(Cli.REPO, "claws", claw), path.join(home, "claws", claw))
    fs.chmodSync(path.join(home, "claws", claw), 0o755)
  }
  const env = Cli.baseEnv({
    PLANCKCLAW_HOME: home,
    ANTHROPIC_API_KEY: "test-key-not-secret",
    ANTHROPIC_BASE_URL: server.url,
    PLANCKCLAW_MODEL: "model-from-env",
    PLANCKCLAW_RUN_DIR: path.join(dir, "run"),
    SHELL: "/bin/sh",
    TERM: "dumb"
  })
  return { server, dir, home, env }
})

describe("the start line", () => {
  it.live("an interactive run prints home, brain, model and tools in one line, before the hint", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const command = `exec ${quote(process.execPath)} ${quote(Cli.BIN)} run --model model-from-flag`
      const proc = yield* Effect.acquireRelease(
        Effect.sync(() => child.spawn("script", ["-qfec", command, "/dev/null"], { cwd: t.dir, env: t.env, stdio: ["pipe", "pipe", "pipe"] })),
        (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
      )
      let raw = ""
      proc.stdout.on("data", (chunk: Buffer) => void (raw += chunk.toString("utf8")))
      const screen = () => raw.replace(ESCAPES, "").replace(/\r/g, "")
      yield* eventually("the prompt", () => (screen().includes("planckclaw> ") ? true : undefined))
      const line = `home ${t.home} (from PLANCKCLAW_HOME) · brain anthropic (${t.server.url}) · model model-from-flag · 2 tools\n`
      expect(screen()).toContain(line)
      expect(screen().indexOf(line)).toBeLessThan(screen().indexOf("/help for commands"))
      expect(screen().split("\n").filter((text) => text.includes(t.home))).toHaveLength(1)
      proc.stdin.write("\u0004")
    }))

  it.live("a piped run prints none of it", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const result = yield* Cli.run(["run"], { cwd: t.dir, env: t.env, input: "hi\n" })
      expect(result.stdout).toBe("re: hi\n")
      expect(result.stderr).not.toContain("· model")
    }))
})
