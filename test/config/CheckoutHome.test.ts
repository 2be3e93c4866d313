/**
 * A checkout is a home (`npm start`): what a run writes into its memory/
 * (history, summary, the usage ledger, journals, locks) is the user's, never
 * a change git offers to commit. The built command answers in a copy of the
 * checkout's ignore rules with git's own matching.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { tempDir } from "../support/Sandbox.js"

const git = (cwd: string, ...args: ReadonlyArray<string>) =>
  child.execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: cwd } })

describe("the checkout as a home (built command)", () => {
  it.live("after a run, git sees nothing new in memory/ but what it tracks (soul.md), usage.jsonl included", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const home = fs.realpathSync(yield* tempDir("planckclaw-checkout-home-"))
      fs.copyFileSync(path.join(Cli.REPO, ".gitignore"), path.join(home, ".gitignore"))
      fs.mkdirSync(path.join(home, "memory"))
      fs.copyFileSync(path.join(Cli.REPO, "memory", "soul.md"), path.join(home, "memory", "soul.md"))
      git(home, "init", "-q")
      git(home, "add", ".gitignore", "memory/soul.md")
      const env = Cli.baseEnv({
        HOME: home,
        PLANCKCLAW_HOME: home,
        PLANCKCLAW_RUN_DIR: path.join(home, "..", `${path.basename(home)}-run`),
        ANTHROPIC_API_KEY: "test-key-not-secret",
        ANTHROPIC_BASE_URL: server.url
      })
      const result = yield* Cli.run(["run"], { cwd: home, env, input: "hello\n/usage\n" })
      expect(result.code).toBe(0)
      expect(fs.existsSync(path.join(home, "memory", "usage.jsonl"))).toBe(true)
      expect(fs.existsSync(path.join(home, "memory", "history.jsonl"))).toBe(true)
      expect(git(home, "status", "--porcelain", "--untracked-files=all")).toBe("A  .gitignore\nA  memory/soul.md\n")
    }))
})
