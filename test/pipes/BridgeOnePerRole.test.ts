/**
 * One bridge per pair of pipes: `planckclaw bridge NAME` beside a run that
 * serves that pair itself, or beside another bridge process serving it, is
 * refused with one line (exit 1), and the run goes on answering its own
 * terminal. The built command.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { eventually, sandbox } from "../support/Sandbox.js"

describe("planckclaw bridge, one per role (built command)", () => {
  it.live("beside a run's own terminal: `bridge cli` is refused, and the run's replies still reach its terminal", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: server.url }, "planckclaw-one-bridge-")
      const running = yield* Cli.start(["run"], { cwd: box.dir, env: box.env })
      yield* running.write("first\n")
      expect(yield* running.lines(1)).toEqual(["re: first"])
      const second = yield* Cli.run(["bridge", "cli"], { cwd: box.dir, env: box.env, input: "stolen?\n" })
      expect(second.code).toBe(1)
      expect(second.stdout).toBe("")
      expect(second.stderr).toBe(
        `planckclaw: the run (pid ${running.process.pid}) serves the interact pipes of ${box.runDir} itself, and one ` +
          "bridge per role may: start the run with --bridge none to serve them from a bridge process\n"
      )
      yield* running.write("second\n")
      expect(yield* running.lines(2)).toEqual(["re: first", "re: second"])
      yield* running.closeInput
      const done = yield* running.done
      expect(done.code).toBe(0)
      expect(done.stdout).toBe("re: first\nre: second\n")
      expect((yield* server.requests).map((request) => AnthropicServer.lastUserText(request.body))).toEqual(["first", "second"])
    })))

  it.live("beside another bridge process: the second `bridge scripts` is refused naming the first; one killed is replaced", () =>
    Effect.scoped(Effect.gen(function*() {
      const box = yield* sandbox({}, "planckclaw-one-bridge-")
      const run = yield* Cli.start(["run", "--bridge", "none", "--brain", "none", "--claw", "none"], { cwd: box.dir, env: box.env })
      yield* eventually("the run's pipes", () => (fs.existsSync(path.join(box.runDir, "claw_out")) ? true : undefined))
      const claws = yield* Cli.start(["bridge", "scripts"], { cwd: box.dir, env: box.env })
      const claim = path.join(box.runDir, "claw-bridge.pid")
      yield* eventually("the first bridge's claim", () => (fs.existsSync(claim) && fs.readFileSync(claim, "utf8") === `${claws.process.pid}\n` ? true : undefined))
      const second = yield* Cli.run(["bridge", "scripts"], { cwd: box.dir, env: box.env })
      expect(second.code).toBe(1)
      expect(second.stderr).toBe(
        `planckclaw: the claw pipes of ${box.runDir} are served already by another bridge (pid ${claws.process.pid}), ` +
          "and one bridge per role may: stop that one first\n"
      )
      // Killed, it cannot release its claim: the next bridge takes it over.
      claws.process.kill("SIGKILL")
      yield* claws.done
      const third = yield* Cli.start(["bridge", "scripts"], { cwd: box.dir, env: box.env })
      yield* eventually("the third bridge's claim", () => (fs.readFileSync(claim, "utf8") === `${third.process.pid}\n` ? true : undefined))
      // A run that ends takes its bridges with it, and its directory is left as it found it.
      run.process.kill("SIGTERM")
      expect((yield* run.done).code).toBe(0)
      expect((yield* third.done).code).toBe(1)
      expect(fs.existsSync(box.runDir)).toBe(false)
    })))
})
