/**
 * Two homes run at once: each lays its pipes in a runtime directory of its
 * own without any setting (the default home keeps the original's
 * /tmp/planckclaw), and doctor names it. The built command; TMPDIR is the
 * test's, so nothing is made in /tmp.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Home from "../../src/config/Home.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { eventually, tempDir } from "../support/Sandbox.js"

const homeAt = (dir: string, server: string) => {
  fs.mkdirSync(path.join(dir, "claws"), { recursive: true })
  fs.writeFileSync(path.join(dir, "config.env"), `ANTHROPIC_API_KEY=test-key-not-secret\nANTHROPIC_BASE_URL=${server}\n`)
  return dir
}

describe("two homes (built command)", () => {
  it.live("run at once, each with its own runtime directory, which doctor names", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const root = fs.realpathSync(yield* tempDir("planckclaw-two-homes-"))
      const tmp = path.join(root, "tmp")
      fs.mkdirSync(tmp)
      const env = Cli.baseEnv({ HOME: path.join(root, "user"), TMPDIR: tmp, PLANCKCLAW_BRAIN_RETRIES: "0" })
      const work = homeAt(path.join(root, "work"), server.url)
      const play = homeAt(path.join(root, "play"), server.url)
      const first = yield* Cli.start(["run"], { cwd: work, env })
      yield* first.write("from work\n")
      expect(yield* first.lines(1)).toEqual(["re: from work"])
      const [workRun] = yield* eventually("work's runtime directory", () => {
        const made = fs.readdirSync(tmp)
        return made.length === 1 ? made : undefined
      })
      expect(workRun).toMatch(/^planckclaw-work-[0-9a-z]+$/)
      // The other home, beside it, from another directory and by PLANCKCLAW_HOME.
      const second = yield* Cli.run(["run"], { cwd: root, env: { ...env, PLANCKCLAW_HOME: play }, input: "from play\n" })
      expect(second.stderr).toBe("")
      expect(second.code).toBe(0)
      expect(second.stdout).toBe("re: from play\n")
      const doctor = yield* Cli.run(["doctor"], { cwd: play, env })
      expect(doctor.stdout).toContain(`✔ home: ${play} (the current directory, a PlanckClaw home)\n`)
      expect(doctor.stdout).toMatch(new RegExp(`\n✔ runtime: ${tmp}/planckclaw-play-[0-9a-z]+ does not exist yet; a run creates it`))
      yield* first.closeInput
      expect((yield* first.done).code).toBe(0)
      expect(fs.readdirSync(tmp)).toEqual([])
    })))
})

describe("Home.runDirFor", () => {
  it("the default home keeps /tmp/planckclaw; any other home has its own, stable, in the temporary directory", () => {
    expect(Home.runDirFor({ dir: Home.defaultHomeDir(), foundBy: "default" }, "/var/tmp")).toBe("/tmp/planckclaw")
    expect(Home.runDirFor({ dir: Home.defaultHomeDir(), foundBy: "PLANCKCLAW_HOME" }, "/var/tmp")).toBe("/tmp/planckclaw")
    const work = Home.runDirFor({ dir: "/srv/agents/work", foundBy: "PLANCKCLAW_HOME" }, "/var/tmp")
    expect(work).toMatch(/^\/var\/tmp\/planckclaw-work-[0-9a-z]+$/)
    expect(Home.runDirFor({ dir: "/srv/agents/work/", foundBy: "current directory" }, "/var/tmp")).toBe(work)
    expect(Home.runDirFor({ dir: "/srv/other/work", foundBy: "PLANCKCLAW_HOME" }, "/var/tmp")).not.toBe(work)
    expect(Home.runDirFor({ dir: "/srv/my agent ünicode", foundBy: "PLANCKCLAW_HOME" }, "/t")).toMatch(/^\/t\/planckclaw-my_agent__nicode-[0-9a-z]+$/)
  })
})
