/**
 * bin/planckclaw: a CommonJS entry (so a start does not set up Node's ES
 * module loader) that starts a `run` from the run-only bundle
 * (dist/cli/run.cjs) and every other command from the whole one
 * (dist/cli/bin.cjs). Each start is the built command as a child process.
 */
import * as child from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"

const repo = path.join(import.meta.dirname, "..", "..")
const bin = path.join(repo, "bin", "planckclaw")
const cacheDir = path.join(repo, "dist", "cli", "code-cache")
const { cacheName, optionsKey } = createRequire(import.meta.url)("../../bin/code-cache.cjs") as {
  readonly cacheName: (bundleBytes: Buffer, command: string, stat?: fs.Stats, options?: string) => string
  readonly optionsKey: (execArgv: ReadonlyArray<string>, nodeOptions: string | undefined) => string
}

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** `node [-r probe] bin/planckclaw ARGS` in a scratch directory: its exit code and output. */
const planckclaw = (args: ReadonlyArray<string>, preload: ReadonlyArray<string> = []) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-bin-entry-"))
  dirs.push(dir)
  const result = child.spawnSync(process.execPath, [...preload, bin, ...args], {
    cwd: dir,
    encoding: "utf8",
    // Pipes of its own too: the default runtime directory may be held by a run of the machine's user.
    env: { ...process.env, HOME: dir, XDG_CACHE_HOME: path.join(dir, "cache"), PLANCKCLAW_DIR: path.join(dir, "memory"), PLANCKCLAW_RUN_DIR: path.join(dir, "run") }
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, dir }
}

/** The cache file a start of `bundle` for `command` with node options `execArgv` makes next to the bundles. */
const cacheOf = (bundle: string, command: string, execArgv: ReadonlyArray<string> = []) => {
  const file = path.join(repo, "dist", "cli", bundle)
  // The starts inherit this process's environment, NODE_OPTIONS included.
  const options = optionsKey(execArgv, process.env.NODE_OPTIONS)
  return path.join(cacheDir, cacheName(fs.readFileSync(file), command, fs.statSync(file), options))
}

describe("the bundles", () => {
  it("start with the SHA-256 of the rest, which keys their code cache without hashing at start, and are already wrapped", () => {
    for (const bundle of ["bin.cjs", "run.cjs"]) {
      const bytes = fs.readFileSync(path.join(repo, "dist", "cli", bundle))
      const newline = bytes.indexOf(10)
      const line = bytes.subarray(0, newline).toString("latin1")
      const hash = createHash("sha256").update(bytes.subarray(newline + 1)).digest("hex")
      expect(line).toBe(`// planckclaw-bundle-sha256:${hash}`)
      // The rest is the code inside the function it runs in (code-cache.cjs's wrapBundle).
      const rest = bytes.subarray(newline + 1).toString("latin1")
      expect(rest.startsWith("(function (exports, require, module, __filename, __dirname, __bundle_url) {")).toBe(true)
      expect(rest.endsWith("\n})")).toBe(true)
      expect(cacheOf(bundle, "run")).toContain(`bin-${hash.slice(0, 24)}-`)
    }
  })

  it("make each Node built-in's namespace once, shared by every importing file (build/shared-builtins.mjs)", () => {
    for (const bundle of ["bin.cjs", "run.cjs"]) {
      const source = fs.readFileSync(path.join(repo, "dist", "cli", bundle), "utf8")
      expect(source).not.toMatch(/__toESM\(require\("node:/)
      // Nor is one left to a dynamic import(), which fails in the vm.Script the bundle runs as.
      expect(source).not.toMatch(/import\("node:/)
      const wrapped = [...source.matchAll(/__reExport\(\w+,require\("(node:[a-z_/]+)"\)\)/g)].map((site) => site[1])
      expect(wrapped).toContain("node:fs")
      expect(wrapped).toContain("node:path")
      expect(new Set(wrapped).size).toBe(wrapped.length)
    }
  })
})

describe("bin/planckclaw", () => {
  it("is CommonJS: the process's main module is the script itself", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-bin-probe-"))
    dirs.push(dir)
    const probe = path.join(dir, "probe.cjs")
    // process.mainModule is set for a CommonJS main module only.
    fs.writeFileSync(probe, `process.on("exit", () => process.stderr.write("main:" + (process.mainModule?.filename ?? "none") + "\\n"))\n`)
    const result = planckclaw(["--version"], ["-r", probe])
    expect(result.code).toBe(0)
    expect(result.stderr).toContain(`main:${bin}\n`)
  })

  it("starts a plain `run` line from the run-only bundle, and other lines and commands from the whole one", () => {
    const plain = cacheOf("run.cjs", "run-x-s")
    const other = cacheOf("bin.cjs", "run")
    const tools = cacheOf("bin.cjs", "tools")
    for (const file of [plain, other, tools, cacheOf("run.cjs", "run")]) fs.rmSync(file, { force: true })
    // A plain line with a bridge that is not there: the run-only bundle refuses it.
    const unknown = planckclaw(["run", "--bridge", "nonsense"])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("planckclaw: unknown bridge 'nonsense'")
    // The bundle that ran made its cache on the way out.
    expect(fs.existsSync(plain)).toBe(true)
    // A refused flag is not a plain line: the whole command line answers (and exits 2).
    const refused = planckclaw(["run", "--bogus"])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toBe("planckclaw: unknown option --bogus for run: see planckclaw run --help\n")
    expect(fs.existsSync(other)).toBe(true)
    expect(fs.existsSync(cacheOf("run.cjs", "run"))).toBe(false)
    expect(planckclaw(["tools"]).code).toBe(0)
    expect(fs.existsSync(tools)).toBe(true)
  })

  it("keeps a code cache per set of node options, as V8 refuses one made under other flags", () => {
    const flag = ["--min-semi-space-size=16"]
    const plain = cacheOf("bin.cjs", "tools")
    const flagged = cacheOf("bin.cjs", "tools", flag)
    expect(flagged).not.toBe(plain)
    for (const file of [plain, flagged]) fs.rmSync(file, { force: true })
    planckclaw(["tools"])
    expect(fs.existsSync(plain)).toBe(true)
    expect(fs.existsSync(flagged)).toBe(false)
    planckclaw(["tools"], flag)
    const made = fs.statSync(flagged).ino
    // Alternated, each start reads its own cache: a refused one would be written again (a new file, renamed in).
    planckclaw(["tools"])
    planckclaw(["tools"], flag)
    expect(fs.statSync(flagged).ino).toBe(made)
  })

  it("starts `run --bridge discord` from the whole bundle: the run-only one leaves the Discord bridge out", () => {
    const whole = cacheOf("bin.cjs", "run-dnn")
    fs.rmSync(whole, { force: true })
    // No token: the Discord bridge's own refusal, from the whole bundle.
    const refused = planckclaw(["run", "--bridge", "discord", "--brain", "none", "--claw", "none"])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain("DISCORD_BOT_TOKEN is not set")
    expect(refused.stderr).not.toContain("is not in dist/cli/run.cjs")
    expect(fs.existsSync(whole)).toBe(true)
    expect(fs.existsSync(cacheOf("run.cjs", "run-dnn"))).toBe(false)
    // The Discord bridge is what requires discord.js: the run-only bundle has no such require.
    expect(fs.readFileSync(path.join(repo, "dist", "cli", "run.cjs"), "latin1")).not.toContain("discord.js")
    expect(fs.readFileSync(path.join(repo, "dist", "cli", "bin.cjs"), "latin1")).toContain("require(\"discord.js\")")
  })

  it("the run-only bundle starts nothing for a line that is not plain, and says so", () => {
    const script = [
      `const { runBundle } = require(${JSON.stringify(path.join(repo, "bin", "code-cache.cjs"))})`,
      `const run = { exports: {} }`,
      `runBundle(require("node:url").pathToFileURL(${JSON.stringify(path.join(repo, "dist", "cli", "run.cjs"))}), "run", run)`,
      `process.stdout.write("started:" + run.exports.started + "\\n")`
    ].join("\n")
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-run-only-"))
    dirs.push(dir)
    const result = child.spawnSync(process.execPath, ["-e", script, "run", "--bogus"], {
      cwd: dir,
      encoding: "utf8",
      // Pipes of its own too: the default runtime directory may be held by a run of the machine's user.
    env: { ...process.env, HOME: dir, XDG_CACHE_HOME: path.join(dir, "cache"), PLANCKCLAW_DIR: path.join(dir, "memory"), PLANCKCLAW_RUN_DIR: path.join(dir, "run") }
    })
    expect(result.status).toBe(0)
    expect(result.stdout).toBe("started:false\n")
    expect(fs.existsSync(path.join(dir, "memory"))).toBe(false)
  })

  /** A probe that has the process report `version` as its Node version, as an older Node would. */
  const nodeVersionProbe = (version: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-bin-node-"))
    dirs.push(dir)
    const probe = path.join(dir, "node-version.cjs")
    fs.writeFileSync(probe, `Object.defineProperty(process, "versions", { value: { ...process.versions, node: ${JSON.stringify(version)} } })\n`)
    return ["-r", probe]
  }

  it("refuses to start on a Node older than package.json's engines, saying which is needed, and makes nothing", () => {
    const engines = JSON.parse(fs.readFileSync(path.join(repo, "package.json"), "utf8")).engines.node
    expect(engines).toBe(">=22.19")
    for (const old of ["20.20.2", "22.18.0"]) {
      const refused = planckclaw(["run", "--bridge", "none"], nodeVersionProbe(old))
      expect(refused.code).toBe(1)
      expect(refused.stderr).toBe(`planckclaw needs Node.js 22.19 or newer (22 or 24); this is Node.js ${old}\n`)
      expect(refused.stdout).toBe("")
      expect(fs.existsSync(path.join(refused.dir, "memory"))).toBe(false)
    }
    const least = planckclaw(["--version"], nodeVersionProbe("22.19.0"))
    expect(least.code).toBe(0)
    expect(least.stdout.trim()).toBe(JSON.parse(fs.readFileSync(path.join(repo, "package.json"), "utf8")).version)
  })
})
