/**
 * The home, as a user meets it: `planckclaw init` into an empty and a
 * non-empty directory, then the built command run from another directory,
 * with PLANCKCLAW_HOME and with a home found by default (the current
 * directory when it is a home, else ~/.planckclaw), against a loopback
 * Anthropic server. Also: config.env written by hand, checked at start-up
 * even with nothing on stdin, and a `$(...)` in it that must not run.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "../support/AnthropicServer.js"
import * as Cli from "../support/Cli.js"
import { tempDir } from "../support/Sandbox.js"

const shipped = ["config.env", "memory/soul.md", ...fs.readdirSync(path.join(Cli.REPO, "claws")).map((name) => `claws/${name}`)]

/** A user's world: a HOME, a directory to stand in, and no PLANCKCLAW_* settings. */
const world = Effect.gen(function*() {
  const root = fs.realpathSync(yield* tempDir("planckclaw-home-"))
  const home = path.join(root, "user")
  const elsewhere = path.join(root, "elsewhere")
  fs.mkdirSync(home)
  fs.mkdirSync(elsewhere)
  return { root, home, elsewhere, env: Cli.baseEnv({ HOME: home, PLANCKCLAW_RUN_DIR: path.join(root, "run") }) }
})

describe("planckclaw init", () => {
  it.live("makes a home in an empty directory from the package's templates and says what it made", () =>
    Effect.gen(function*() {
      const w = yield* world
      const target = path.join(w.root, "fresh")
      const result = yield* Cli.run(["init", target], { cwd: w.elsewhere, env: w.env })
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(`Created in ${target}:`)
      for (const file of shipped) {
        expect(result.stdout).toContain(file)
        expect(fs.existsSync(path.join(target, file)), file).toBe(true)
      }
      expect(fs.readFileSync(path.join(target, "config.env"), "utf8")).toBe(
        fs.readFileSync(path.join(Cli.REPO, "config.env.example"), "utf8")
      )
      expect(fs.statSync(path.join(target, "config.env")).mode & 0o777).toBe(0o600)
      expect(fs.statSync(path.join(target, "claws/dice.sh")).mode & 0o111).not.toBe(0)
      expect(result.stdout).toContain(`export PLANCKCLAW_HOME=${target}`)
    }))

  it.live("in a directory that has some of it, creates only what is missing and overwrites nothing", () =>
    Effect.gen(function*() {
      const w = yield* world
      const target = path.join(w.root, "mine")
      fs.mkdirSync(path.join(target, "memory"), { recursive: true })
      fs.writeFileSync(path.join(target, "config.env"), "export HISTORY_MAX=\"300\"\n")
      fs.writeFileSync(path.join(target, "memory/soul.md"), "I am mine.\n")
      const result = yield* Cli.run(["init"], { cwd: target, env: w.env })
      expect(result.code).toBe(0)
      // The current directory holds config.env: it is the home `init` completes.
      expect(result.stdout).toContain(`Created in ${target}:`)
      expect(result.stdout).toContain("Kept as they were: config.env, memory/soul.md")
      expect(fs.readFileSync(path.join(target, "config.env"), "utf8")).toBe("export HISTORY_MAX=\"300\"\n")
      expect(fs.readFileSync(path.join(target, "memory/soul.md"), "utf8")).toBe("I am mine.\n")
      expect(fs.existsSync(path.join(target, "claws/time.sh"))).toBe(true)
      const again = yield* Cli.run(["init", target], { cwd: w.elsewhere, env: w.env })
      expect(again.stdout).toContain("Nothing to do")
    }))

  it.live("without DIR and without a config.env here, makes ~/.planckclaw", () =>
    Effect.gen(function*() {
      const w = yield* world
      const result = yield* Cli.run(["init"], { cwd: w.elsewhere, env: w.env })
      expect(result.code).toBe(0)
      expect(fs.existsSync(path.join(w.home, ".planckclaw/config.env"))).toBe(true)
      expect(fs.readdirSync(w.elsewhere)).toEqual([])
      expect(result.stdout).toContain("then run: planckclaw run")
    }))
})

describe("planckclaw init, refused", () => {
  it.live("a DIR under a file: one line saying so, exit 1, no stack trace", () =>
    Effect.gen(function*() {
      const w = yield* world
      const file = path.join(w.root, "a-file")
      fs.writeFileSync(file, "")
      const result = yield* Cli.run(["init", path.join(file, "home")], { cwd: w.elsewhere, env: w.env })
      expect(result.code).toBe(1)
      expect(result.stderr).toBe(
        `planckclaw: init: cannot create ${path.join(file, "home")}: ENOTDIR: not a directory, mkdir '${path.join(file, "home")}'\n`
      )
    }))

  it.live("stopped part-way (memory is a file): the line says what it made already; a config.env that is a link to nothing is kept with a warning", () =>
    Effect.gen(function*() {
      const w = yield* world
      const target = path.join(w.root, "half")
      fs.mkdirSync(target)
      fs.writeFileSync(path.join(target, "memory"), "")
      const result = yield* Cli.run(["init", target], { cwd: w.elsewhere, env: w.env })
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(new RegExp(`^planckclaw: init: cannot create ${target}/memory: .*\\(already created in ${target}: config\\.env\\)\\n$`))

      const linked = path.join(w.root, "linked")
      fs.mkdirSync(linked)
      fs.symlinkSync(path.join(w.root, "nowhere.env"), path.join(linked, "config.env"))
      const kept = yield* Cli.run(["init", linked], { cwd: w.elsewhere, env: w.env })
      expect(kept.code).toBe(0)
      expect(kept.stdout).toContain(`Warning: ${linked}/config.env is a link to nothing, kept as it is; remove it and run init again`)
      expect(fs.existsSync(path.join(w.root, "nowhere.env"))).toBe(false)
    }))

  it.live("--wizard (effect/cli's question mode, never documented) is no option: refused at once (exit 2), never waiting for answers", () =>
    Effect.gen(function*() {
      const w = yield* world
      const result = yield* Cli.run(["--wizard"], { cwd: w.elsewhere, env: w.env, input: "" })
      expect(result.code).toBe(2)
      expect(result.stderr).toBe("planckclaw: unknown option --wizard: see planckclaw --help\n")
    }))
})

describe("the home, from another directory (built command)", () => {
  /** A home made by init, its key and server filled in by hand, as a user would. */
  const homeWith = (dir: string, env: NodeJS.ProcessEnv, server: string, extra = "") =>
    Effect.gen(function*() {
      yield* Cli.run(["init", dir], { cwd: path.dirname(dir), env })
      fs.appendFileSync(
        path.join(dir, "config.env"),
        `\nexport ANTHROPIC_API_KEY="test-key-not-secret"  # filled in by hand\nANTHROPIC_BASE_URL='${server}'\n${extra}`
      )
    })

  it.live("with PLANCKCLAW_HOME: its config.env, memory and claws are used, and nothing lands where it runs", () =>
    Effect.gen(function*() {
      const w = yield* world
      const server = yield* AnthropicServer.make(AnthropicServer.replies(
        AnthropicServer.toolUse([{ id: "tu_1", name: "get_time", input: {} }]),
        AnthropicServer.text("It is noon.")
      ))
      const home = path.join(w.root, "agent")
      // Relative paths in config.env are relative to the home; variables come from earlier lines.
      yield* homeWith(home, w.env, server.url, "NAME=mem\nexport PLANCKCLAW_DIR=\"./${NAME}\"\n")
      fs.mkdirSync(path.join(home, "mem"))
      fs.writeFileSync(path.join(home, "mem/soul.md"), "I am the agent of this home.\n")
      const env = { ...w.env, PLANCKCLAW_HOME: home }
      const tools = yield* Cli.run(["tools"], { cwd: w.elsewhere, env })
      expect(tools.stdout).toContain(`Tools in ${path.join(home, "claws")}:`)
      expect(tools.stdout).toContain("get_time")
      const result = yield* Cli.run(["run"], { cwd: w.elsewhere, env, input: "what time is it?\n" })
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("It is noon.")
      expect(fs.readFileSync(path.join(home, "mem/history.jsonl"), "utf8")).toContain("It is noon.")
      expect(fs.readdirSync(w.elsewhere)).toEqual([])
      const requests = yield* server.requests
      // The soul of the home's memory, and the claws of the home.
      expect(JSON.stringify(requests[0]!.body)).toContain("I am the agent of this home.")
      expect(JSON.stringify(requests[0]!.body)).toContain("get_time")
    }))

  it.live("found by default: ~/.planckclaw, when the current directory holds no config.env", () =>
    Effect.gen(function*() {
      const w = yield* world
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      yield* homeWith(path.join(w.home, ".planckclaw"), w.env, server.url)
      const result = yield* Cli.run(["run"], { cwd: w.elsewhere, env: w.env, input: "one\n" })
      expect(result.code).toBe(0)
      expect(fs.readFileSync(path.join(w.home, ".planckclaw/memory/history.jsonl"), "utf8")).toContain("one")
      expect(fs.readdirSync(w.elsewhere)).toEqual([])
    }))

  it.live("found by default: the current directory, when it is a home", () =>
    Effect.gen(function*() {
      const w = yield* world
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const local = path.join(w.root, "project")
      yield* homeWith(local, w.env, server.url)
      const result = yield* Cli.run(["run"], { cwd: local, env: w.env, input: "two\n" })
      expect(result.code).toBe(0)
      expect(fs.readFileSync(path.join(local, "memory/history.jsonl"), "utf8")).toContain("two")
      expect(fs.existsSync(path.join(w.home, ".planckclaw"))).toBe(false)
    }))

  it.live("a missing key names the file to put it in, and that init makes it", () =>
    Effect.gen(function*() {
      const w = yield* world
      const result = yield* Cli.run(["run"], { cwd: w.elsewhere, env: w.env, input: "" })
      expect(result.code).toBe(2)
      expect(result.stderr.trim().split("\n")).toHaveLength(1)
      expect(result.stderr).toContain(`ANTHROPIC_API_KEY is not set`)
      expect(result.stderr).toContain(path.join(w.home, ".planckclaw/config.env"))
      expect(result.stderr).toContain("planckclaw init")
    }))
})

describe("config.env written by hand (built command)", () => {
  it.live("a bad value is refused at start-up with the key, even with nothing on stdin", () =>
    Effect.gen(function*() {
      const w = yield* world
      // A home by hand: config.env beside a memory/ (a config.env alone makes no home, see HomeChoice.test).
      fs.mkdirSync(path.join(w.elsewhere, "memory"))
      fs.writeFileSync(path.join(w.elsewhere, "config.env"), "export ANTHROPIC_API_KEY=\"test-key\"\nHISTORY_MAX=lots # oops\n")
      const result = yield* Cli.run(["run"], { cwd: w.elsewhere, env: w.env, input: "" })
      expect(result.code).toBe(2)
      expect(result.stderr.trim()).toBe(
        "planckclaw: configuration error: HISTORY_MAX: expected an integer from 1 to 1000000000, got \"lots\""
      )
      fs.writeFileSync(path.join(w.elsewhere, "config.env"), "HISTORY_MAX=40\nHISTORY_KEEP=$HISTORY_MAX\n")
      const cross = yield* Cli.run(["tools"], { cwd: w.elsewhere, env: w.env })
      expect(cross.code).toBe(2)
      expect(cross.stderr.trim()).toBe("planckclaw: configuration error: HISTORY_KEEP must be smaller than HISTORY_MAX")
    }))

  it.live("a $(...) line is refused with its line number and never run", () =>
    Effect.gen(function*() {
      const w = yield* world
      fs.mkdirSync(path.join(w.elsewhere, "claws"))
      const marker = path.join(w.root, "ran")
      fs.writeFileSync(path.join(w.elsewhere, "config.env"), `# mine\nexport PLANCKCLAW_MODEL=$(touch ${marker})\n`)
      const result = yield* Cli.run(["run"], { cwd: w.elsewhere, env: w.env, input: "hi\n" })
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(`${path.join(w.elsewhere, "config.env")}:2: command substitution`)
      expect(result.stderr).not.toContain("touch")
      expect(fs.existsSync(marker)).toBe(false)
    }))
})
