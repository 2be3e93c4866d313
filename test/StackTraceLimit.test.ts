/**
 * A bundle's modules load with no stack trace limit (bin/code-cache.cjs), so
 * effect's Utils formats no stack trace at load; the entry puts the limit
 * back before any command runs (src/StackTraceLimit.ts), and the loader does
 * at the latest, even when loading fails.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import * as StackTraceLimit from "../src/StackTraceLimit.js"

const loader = pathToFileURL(path.join(import.meta.dirname, "..", "bin", "code-cache.cjs")).href
const key = Symbol.for("planckclaw/stackTraceLimit")

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** Runs `body` as a bundle through the loader in a fresh node; the lines it printed. */
const load = (body: string): Array<string> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-stack-limit-"))
  dirs.push(dir)
  const bundle = path.join(dir, "cli", "run.cjs")
  fs.mkdirSync(path.dirname(bundle))
  fs.writeFileSync(bundle, body)
  const program = `const { runBundle } = require(${JSON.stringify(new URL(loader).pathname)})
    try { runBundle(${JSON.stringify(pathToFileURL(bundle).href)}, "run") } catch (error) { console.log("threw " + error.message) }
    console.log("after " + Error.stackTraceLimit + " " + (globalThis[Symbol.for("planckclaw/stackTraceLimit")] === undefined))`
  return child.execFileSync(process.execPath, ["-e", program], { encoding: "utf8", env: { ...process.env, XDG_CACHE_HOME: dir } })
    .trim().split("\n")
}

describe("the stack trace limit while a bundle loads", () => {
  it("is 0 while its modules load, the usual one again once the entry restores it, and after", () => {
    const lines = load(`console.log("loading " + Error.stackTraceLimit)
      const kept = globalThis[Symbol.for("planckclaw/stackTraceLimit")]
      delete globalThis[Symbol.for("planckclaw/stackTraceLimit")]
      Error.stackTraceLimit = kept
      console.log("entry " + Error.stackTraceLimit + " " + new Error("x").stack.split("\\n").length)`)
    expect(lines).toEqual(["loading 0", "entry 10 " + lines[1]!.split(" ")[2], "after 10 true"])
    expect(Number(lines[1]!.split(" ")[2])).toBeGreaterThan(1)
  })

  it("is put back by the loader when the bundle's load fails", () => {
    expect(load(`throw new Error("broken bundle")`)).toEqual(["threw broken bundle", "after 10 true"])
  })

  it("is the usual one in a run of the built command", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-stack-limit-"))
    dirs.push(dir)
    const probe = path.join(dir, "probe.cjs")
    // The limit when the refusal is written (while the bundle is still being run, before the loader's own restore).
    fs.writeFileSync(
      probe,
      `const write = process.stderr.write.bind(process.stderr)\n` +
        `process.stderr.write = (text, ...rest) => write(String(text).startsWith("planckclaw:") ? "limit " + Error.stackTraceLimit + " " + text : text, ...rest)\n`
    )
    const bin = path.join(import.meta.dirname, "..", "bin", "planckclaw")
    // A plain line through the run bundle: refused by the run's handler, after the entry has run.
    const result = child.spawnSync(process.execPath, ["--require", probe, bin, "run", "--bridge", "bogus"], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, PLANCKCLAW_HOME: dir, PLANCKCLAW_RUN_DIR: path.join(dir, "run"), XDG_CACHE_HOME: dir }
    })
    expect(result.status).toBe(2)
    expect(result.stderr).toMatch(/^limit 10 planckclaw: unknown bridge 'bogus'/m)
  })

  it("is put back by StackTraceLimit.restore, and left alone when nothing was kept", () => {
    const usual = Error.stackTraceLimit
    const kept = globalThis as { [key]?: number }
    try {
      kept[key] = 7
      Error.stackTraceLimit = 0
      StackTraceLimit.restore()
      expect(Error.stackTraceLimit).toBe(7)
      expect(kept[key]).toBeUndefined()
      Error.stackTraceLimit = 5
      StackTraceLimit.restore()
      expect(Error.stackTraceLimit).toBe(5)
    } finally {
      delete kept[key]
      Error.stackTraceLimit = usual
    }
  })
})
