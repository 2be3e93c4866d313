/**
 * A bundle's modules load with stack traces formatted by function name only
 * (bin/code-cache.cjs), so Node's formatter is not run while they load; the
 * entry puts Node's formatter back before any command runs
 * (src/runtime/StackTraces.ts), and the loader does at the latest, even when
 * loading fails.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import * as StackTraces from "../../src/runtime/StackTraces.js"

const loader = path.join(import.meta.dirname, "..", "..", "bin", "code-cache.cjs")
const key = Symbol.for("planckclaw/prepareStackTrace")

const dirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-stack-traces-"))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** How a trace of `named` reads: "names" (function names only) or "node" (with file positions). */
const probe = `const named = () => new Error("x").stack; const kind = () => named().includes(".cjs:") ? "node" : "names"`

/** Runs `body` as a bundle through the loader in a fresh node; the lines printed. */
const load = (body: string): Array<string> => {
  const dir = tempDir()
  const bundle = path.join(dir, "cli", "run.cjs")
  fs.mkdirSync(path.dirname(bundle))
  fs.writeFileSync(bundle, `${probe}\n${body}`)
  const program = `const { runBundle } = require(${JSON.stringify(loader)})
    try { runBundle(${JSON.stringify(pathToFileURL(bundle).href)}, "run") } catch (error) { console.log("threw " + error.message) }
    const after = new Error("y").stack.split("\\n")[1]
    console.log("after " + (after.includes("[eval]") ? "node" : "names") + " " + Object.hasOwn(globalThis, Symbol.for("planckclaw/prepareStackTrace")))`
  return child.execFileSync(process.execPath, ["-e", program], { encoding: "utf8", env: { ...process.env, XDG_CACHE_HOME: dir } })
    .trim().split("\n")
}

describe("stack traces while a bundle loads", () => {
  it("name the functions only while its modules load, and are Node's again once the entry restores them, and after", () => {
    const lines = load(`console.log("loading " + kind() + " " + named().includes("at named"))
      const kept = globalThis[Symbol.for("planckclaw/prepareStackTrace")]
      delete globalThis[Symbol.for("planckclaw/prepareStackTrace")]
      Error.prepareStackTrace = kept
      console.log("entry " + kind())`)
    expect(lines).toEqual(["loading names true", "entry node", "after node false"])
  })

  it("are Node's again when the bundle's load fails", () => {
    expect(load(`throw new Error("broken bundle")`)).toEqual(["threw broken bundle", "after node false"])
  })

  it("are Node's in a run of the built command, from its first line of output", () => {
    const dir = tempDir()
    const probeFile = path.join(dir, "probe.cjs")
    // When the refusal is written (while the bundle may still be running), how a trace reads.
    fs.writeFileSync(
      probeFile,
      `const write = process.stderr.write.bind(process.stderr)\n` +
        `process.stderr.write = (text, ...rest) => write(String(text).startsWith("planckclaw:") ? ` +
        `(new Error("p").stack.includes("probe.cjs:") ? "node " : "names ") + text : text, ...rest)\n`
    )
    const bin = path.join(import.meta.dirname, "..", "..", "bin", "planckclaw")
    // A plain line through the run bundle: refused by the run's handler, after the entry has run.
    const result = child.spawnSync(process.execPath, ["--require", probeFile, bin, "run", "--bridge", "bogus"], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, PLANCKCLAW_HOME: dir, PLANCKCLAW_RUN_DIR: path.join(dir, "run"), XDG_CACHE_HOME: dir }
    })
    expect(result.status).toBe(2)
    expect(result.stderr).toMatch(/^node planckclaw: unknown bridge 'bogus'/m)
  })

  it("are put back by StackTraces.restore, which leaves them alone when nothing was kept", () => {
    const usual = Error.prepareStackTrace
    const kept = globalThis as { [key]?: unknown }
    const mine = (error: Error) => `mine ${error.message}`
    try {
      kept[key] = mine
      Error.prepareStackTrace = () => "loading"
      StackTraces.restore()
      expect(Error.prepareStackTrace).toBe(mine)
      expect(Object.hasOwn(kept, key)).toBe(false)
      StackTraces.restore()
      expect(Error.prepareStackTrace).toBe(mine)
    } finally {
      delete kept[key]
      Error.prepareStackTrace = usual
    }
  })
})
