/**
 * bin/planckclaw: a CommonJS entry (so a start does not set up Node's ES
 * module loader) that starts every command line, `run` included, from the
 * one bundle of the command line (dist/cli/bin.cjs), parsed by effect/cli.
 * Each start is the built command as a child process.
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
    env: { ...process.env, HOME: dir, XDG_CACHE_HOME: path.join(dir, "cache"), PLANCKCLAW_DIR: path.join(dir, "memory") }
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
    for (const bundle of ["bin.cjs"]) {
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
    for (const bundle of ["bin.cjs"]) {
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

  it("parses every `run` line with the one command line: another spelling of the same flags gets the same answer", () => {
    const cache = cacheOf("bin.cjs", "run-x-s")
    for (const file of [cache, cacheOf("bin.cjs", "run"), cacheOf("bin.cjs", "tools")]) fs.rmSync(file, { force: true })
    // A bridge that is not there: refused by the run's own check, whichever way the flag is spelled.
    const spaced = planckclaw(["run", "--bridge", "nonsense"])
    expect(spaced.code).toBe(2)
    expect(spaced.stderr).toContain("planckclaw: unknown bridge 'nonsense'")
    const joined = planckclaw(["run", "--bridge=nonsense"])
    expect(joined).toMatchObject({ code: spaced.code, stdout: spaced.stdout, stderr: spaced.stderr })
    // The bundle made its cache on the way out, under the run's bridges (and `run` for the other spelling).
    expect(fs.existsSync(cache)).toBe(true)
    expect(fs.existsSync(cacheOf("bin.cjs", "run"))).toBe(true)
    const refused = planckclaw(["run", "--bogus"])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toBe("planckclaw: unknown option --bogus for run: see planckclaw run --help\n")
    expect(planckclaw(["tools"]).code).toBe(0)
    expect(fs.existsSync(cacheOf("bin.cjs", "tools"))).toBe(true)
    // No second bundle beside it.
    expect(fs.readdirSync(path.join(repo, "dist", "cli")).filter((name) => name.endsWith(".cjs")).sort()).toEqual(["bin.cjs", "spawn-helper.cjs"])
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

  it("starts `run --bridge discord` from the same bundle, which holds the Discord bridge", () => {
    const whole = cacheOf("bin.cjs", "run-dnn")
    fs.rmSync(whole, { force: true })
    // No token: the Discord bridge's own refusal.
    const refused = planckclaw(["run", "--bridge", "discord", "--brain", "none", "--claw", "none"])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain("DISCORD_BOT_TOKEN is not set")
    expect(fs.existsSync(whole)).toBe(true)
    expect(fs.readFileSync(path.join(repo, "dist", "cli", "bin.cjs"), "latin1")).toContain("require(\"discord.js\")")
  })
})
