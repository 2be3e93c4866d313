/**
 * Which folder is the home: only a PlanckClaw home counts (its config.env
 * beside memory/, claws/ or agents/), not any folder that happens to hold a
 * config.env; a config.env of ours passed over is said, and a start says
 * which home is in use and why. The built command, against a loopback
 * Anthropic server.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Home from "../../src/config/Home.js"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { eventually, tempDir } from "../support/Sandbox.js"

/** A user's world: a HOME whose ~/.planckclaw answers through `server`, a folder to stand in, no PLANCKCLAW_* settings. */
const world = (server: string) =>
  Effect.gen(function*() {
    const root = fs.realpathSync(yield* tempDir("planckclaw-home-choice-"))
    const user = path.join(root, "user")
    const folder = path.join(root, "folder")
    fs.mkdirSync(path.join(user, ".planckclaw", "claws"), { recursive: true })
    fs.mkdirSync(folder)
    fs.writeFileSync(path.join(user, ".planckclaw", "config.env"), `ANTHROPIC_API_KEY=test-key-not-secret\nANTHROPIC_BASE_URL=${server}\n`)
    const env = Cli.baseEnv({ HOME: user, PLANCKCLAW_RUN_DIR: path.join(root, "run"), PLANCKCLAW_BRAIN_RETRIES: "0" })
    return { root, user, folder, env, defaultHome: path.join(user, ".planckclaw") }
  })

describe("which folder is the home (built command)", () => {
  it.live("a folder whose config.env has no memory/, claws/ or agents/ beside it is no home: the default answers, the folder stays as it was, a warning says why", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const w = yield* world(server.url)
      // Some project's config.env that sets a key of ours: not a home of planckclaw.
      fs.writeFileSync(path.join(w.folder, "config.env"), "PLANCKCLAW_MODEL=from-the-folder\n")
      const result = yield* Cli.run(["run"], { cwd: w.folder, env: w.env, input: "hello\n" })
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("re: hello\n")
      expect(fs.readdirSync(w.folder)).toEqual(["config.env"])
      expect(fs.readFileSync(path.join(w.defaultHome, "memory", "history.jsonl"), "utf8")).toContain("hello")
      expect(JSON.stringify((yield* server.requests)[0]!.body)).not.toContain("from-the-folder")
      expect(result.stderr).toBe(
        `planckclaw warn: ${path.join(w.folder, "config.env")} is not read: its directory is no PlanckClaw home ` +
          `(no memory/, claws/ or agents/ beside it); \`planckclaw init ${w.folder}\` makes it one, or set PLANCKCLAW_HOME\n`
      )
    }))

  it.live("a config.env that sets nothing of ours is someone else's: passed over without a word", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const w = yield* world(server.url)
      fs.writeFileSync(path.join(w.folder, "config.env"), "DATABASE_URL=postgres://elsewhere\n")
      const result = yield* Cli.run(["run"], { cwd: w.folder, env: w.env, input: "hi\n" })
      expect(result.code).toBe(0)
      expect(result.stderr).toBe("")
      expect(fs.readdirSync(w.folder)).toEqual(["config.env"])
    }))

  it.live("a folder made a home by init is the home from inside it", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const w = yield* world(server.url)
      fs.writeFileSync(path.join(w.folder, "config.env"), `ANTHROPIC_API_KEY=test-key-not-secret\nANTHROPIC_BASE_URL=${server.url}\n`)
      const init = yield* Cli.run(["init", w.folder], { cwd: w.root, env: w.env })
      expect(init.stdout).toContain("Kept as they were: config.env")
      const result = yield* Cli.run(["run"], { cwd: w.folder, env: w.env, input: "mine\n" })
      expect(result.code).toBe(0)
      expect(result.stderr).toBe("")
      expect(fs.readFileSync(path.join(w.folder, "memory", "history.jsonl"), "utf8")).toContain("mine")
      expect(fs.existsSync(path.join(w.defaultHome, "memory"))).toBe(false)
    }))

  it.live("a home whose config.env is a link to nothing is still that home: the start refuses it, naming it, and never falls back to the default", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const w = yield* world(server.url)
      fs.mkdirSync(path.join(w.folder, "memory"))
      fs.symlinkSync(path.join(w.root, "moved-away.env"), path.join(w.folder, "config.env"))
      const result = yield* Cli.run(["run"], { cwd: w.folder, env: w.env, input: "hello\n" })
      expect(result.code).not.toBe(0)
      expect(result.stderr).toContain(path.join(w.folder, "config.env"))
      expect(fs.existsSync(path.join(w.defaultHome, "memory"))).toBe(false)
      expect((yield* server.requests).length).toBe(0)
    }))

  it.live("a start says which home is in use and why, and where its pipes are: a debug line when piped", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const w = yield* world(server.url)
      const named = yield* Cli.run(["run", "--log-level", "debug"], {
        cwd: w.folder,
        env: { ...w.env, PLANCKCLAW_HOME: w.defaultHome },
        input: "hi\n"
      })
      expect(named.stderr).toContain(`planckclaw debug: home ${w.defaultHome} (from PLANCKCLAW_HOME); its pipes in ${path.join(w.root, "run")}\n`)
      const found = yield* Cli.run(["run", "--log-level", "debug"], { cwd: w.folder, env: w.env, input: "hi\n" })
      expect(found.stderr).toContain(`planckclaw debug: home ${w.defaultHome} (the default home); its pipes in`)
      const quiet = yield* Cli.run(["run"], { cwd: w.folder, env: w.env, input: "hi\n" })
      expect(quiet.stderr).toBe("")
    }))

  it.live("at a terminal the start line says it, before the prompt", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const w = yield* world(server.url)
      const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`
      const command = `exec ${quote(process.execPath)} ${quote(Cli.BIN)} run`
      // util-linux `script` gives the run a pseudo-terminal for its standard input, output and error.
      const session = yield* Effect.acquireRelease(
        Effect.sync(() =>
          child.spawn("script", ["-qfec", command, "/dev/null"], {
            cwd: w.folder,
            env: { ...w.env, SHELL: "/bin/sh", TERM: "dumb" },
            stdio: ["pipe", "pipe", "pipe"]
          })
        ),
        (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
      )
      let screen = ""
      session.stdout.on("data", (chunk: Buffer) => void (screen += chunk.toString("utf8")))
      yield* eventually("the prompt", () => (screen.includes("planckclaw> ") ? true : undefined))
      // Said once, in the run's start line (with the brain, model and tools), not again in the log.
      expect(screen).toMatch(/home ~\/\.planckclaw \(the default home\) · brain anthropic \(http:\/\/127\.0\.0\.1:\d+\) · model \S+ · \d+ tools?\r?\n/)
      expect(screen).not.toContain("planckclaw info: home")
      session.stdin.write("\u0004")
    }))
})

describe("Home.locate", () => {
  it.live("PLANCKCLAW_HOME first; then the current directory if a home; else ~/.planckclaw", () =>
    Effect.gen(function*() {
      const dir = fs.realpathSync(yield* tempDir("planckclaw-locate-"))
      const fallback = Home.defaultHomeDir()
      expect(Home.locate({ PLANCKCLAW_HOME: "h" }, dir)).toEqual({ dir: path.join(dir, "h"), foundBy: "PLANCKCLAW_HOME" })
      expect(Home.locate({}, dir)).toEqual({ dir: fallback, foundBy: "default" })
      fs.writeFileSync(path.join(dir, "config.env"), "# nothing yet\n")
      expect(Home.locate({}, dir)).toEqual({ dir: fallback, foundBy: "default" })
      fs.writeFileSync(path.join(dir, "config.env"), "export HISTORY_MAX=300\n")
      expect(Home.locate({}, dir)).toEqual({ dir: fallback, foundBy: "default", passedOver: path.join(dir, "config.env") })
      for (const part of Home.homeParts) {
        fs.mkdirSync(path.join(dir, part))
        expect(Home.locate({}, dir), part).toEqual({ dir, foundBy: "current directory" })
        fs.rmdirSync(path.join(dir, part))
      }
      // A file named like a part is no part.
      fs.writeFileSync(path.join(dir, "memory"), "")
      expect(Home.locate({}, dir).foundBy).toBe("default")
    }))
})
