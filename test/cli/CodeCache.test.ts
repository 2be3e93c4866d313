/**
 * bin/code-cache.mjs: the command line's bundle runs with a V8 code cache
 * made by an earlier start, next to the bundle or, when that cannot be
 * written, in the user's cache directory; a cache that does not fit (other
 * bundle, damaged file) is never used for the wrong code, caches left
 * unwritten for 30 days go, and nothing about the cache stops a start.
 * Each start is a real child process, the last test's the built
 * `planckclaw run`, which changes V8 flags once ready.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { afterEach, describe, expect, it } from "vitest"

const repo = path.join(import.meta.dirname, "..", "..")
const loader = pathToFileURL(path.join(import.meta.dirname, "..", "..", "bin", "code-cache.mjs")).href
const { wrapBundle } = createRequire(import.meta.url)("../../bin/code-cache.cjs") as { readonly wrapBundle: (code: string) => string }

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** A package-like directory with a CommonJS bundle that prints `text` and what the loader gave it. */
const bundleIn = (text: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-code-cache-"))
  dirs.push(dir)
  const bundle = path.join(dir, "cli", "bin.cjs")
  fs.mkdirSync(path.dirname(bundle))
  const write = (body: string) =>
    fs.writeFileSync(bundle, `const greet = (who) => ${JSON.stringify(body)} + " " + who\nconsole.log(greet(require("node:path").basename(__filename)), __bundle_url.startsWith("file:"))\n`)
  write(text)
  return { dir, bundle, write, cacheDir: path.join(dir, "cli", "code-cache"), xdg: path.join(dir, "xdg") }
}

/** Runs the bundle through the loader as `planckclaw COMMAND`; its output and whether V8 refused a cache. */
const start = (bundle: string, xdg: string, command = "run") => {
  const program = `import(${JSON.stringify(loader)}).then(({ runBundle }) => {
    const script = runBundle(${JSON.stringify(pathToFileURL(bundle).href)}, ${JSON.stringify(command)})
    process.on("exit", () => console.log("rejected:" + script.cachedDataRejected))
  })`
  const output = child.execFileSync(process.execPath, ["--input-type=module", "-e", program], {
    encoding: "utf8",
    env: { ...process.env, XDG_CACHE_HOME: xdg }
  })
  return output
}

const cacheFiles = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => name.endsWith(".v8cache")) : [])

describe("the code cache of the command line's bundle", () => {
  it("is made by the first start next to the bundle and used by the next, per command", () => {
    const t = bundleIn("hello")
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:undefined\n")
    // Started with node options (`-e` and the program), so keyed by them too (see optionsKey).
    expect(cacheFiles(t.cacheDir)).toEqual([expect.stringMatching(new RegExp(`^bin-[0-9a-f]{24}-run-o[0-9a-z]+-${process.version}-${process.arch}\\.v8cache$`))])
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:false\n")
    // Another command compiles other functions: it gets its own cache.
    expect(start(t.bundle, t.xdg, "tools")).toBe("hello bin.cjs true\nrejected:undefined\n")
    expect(cacheFiles(t.cacheDir)).toHaveLength(2)
    expect(cacheFiles(t.xdg)).toEqual([])
  })

  it("runs a bundle the build wrote inside its function (after the hash line) as the same module, with its cache", () => {
    const t = bundleIn("hello")
    const code = fs.readFileSync(t.bundle, "latin1") + "module.exports.seen = typeof exports\n"
    fs.writeFileSync(t.bundle, `// planckclaw-bundle-sha256:${"cd".repeat(32)}\n${wrapBundle(code)}`)
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:undefined\n")
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:false\n")
    // Wrapped once, not twice: a second wrapper would only make the function, never call it.
    const exported = child.execFileSync(process.execPath, ["--input-type=module", "-e", `import(${JSON.stringify(loader)}).then(({ runBundle }) => {
      const module = { exports: {} }
      runBundle(${JSON.stringify(pathToFileURL(t.bundle).href)}, "run", module)
      console.log(module.exports.seen)
    })`], { encoding: "utf8", env: { ...process.env, XDG_CACHE_HOME: t.xdg } })
    expect(exported).toBe("hello bin.cjs true\nobject\n")
  })

  it("goes to the user's cache directory when the package's cannot be written", () => {
    const t = bundleIn("hello")
    fs.writeFileSync(t.cacheDir, "not a directory")
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:undefined\n")
    expect(cacheFiles(path.join(t.xdg, "planckclaw"))).toHaveLength(1)
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:false\n")
  })

  it("is keyed by a bundle's own hash line, with its size and time, so a bundle edited after the build gets its own", () => {
    const t = bundleIn("hello")
    const body = fs.readFileSync(t.bundle, "latin1")
    // Any hash will do: the start takes the line's word for it, as it does the build's.
    const line = `// planckclaw-bundle-sha256:${"ab".repeat(32)}\n`
    fs.writeFileSync(t.bundle, line + body)
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:undefined\n")
    expect(cacheFiles(t.cacheDir)).toEqual([expect.stringMatching(/^bin-(ab){12}-[0-9a-z]+-[0-9a-z]+-run-/)])
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:false\n")
    // The same length and the same line, other code: not the cache of the code before.
    fs.writeFileSync(t.bundle, line + body.replace("hello", "HELLO"))
    fs.utimesSync(t.bundle, new Date(), new Date(Date.now() + 5000))
    expect(start(t.bundle, t.xdg)).toBe("HELLO bin.cjs true\nrejected:undefined\n")
    expect(cacheFiles(t.cacheDir)).toHaveLength(2)
  })

  it("is not used for a changed bundle, and a damaged cache is refused, the start goes on and the cache is made again", () => {
    const t = bundleIn("hello")
    start(t.bundle, t.xdg)
    t.write("goodbye")
    expect(start(t.bundle, t.xdg)).toBe("goodbye bin.cjs true\nrejected:undefined\n")
    expect(cacheFiles(t.cacheDir)).toHaveLength(2)
    for (const name of cacheFiles(t.cacheDir)) fs.writeFileSync(path.join(t.cacheDir, name), Buffer.alloc(4096, 7))
    expect(start(t.bundle, t.xdg)).toBe("goodbye bin.cjs true\nrejected:true\n")
    expect(start(t.bundle, t.xdg)).toBe("goodbye bin.cjs true\nrejected:false\n")
  })

  it("removes, when it writes one, the caches not written for 30 days, and nothing else", () => {
    const t = bundleIn("hello")
    fs.mkdirSync(t.cacheDir, { recursive: true })
    const old = Date.now() / 1000 - 31 * 24 * 60 * 60
    const entries = {
      oldCache: `bin-${"0".repeat(24)}-run-${process.version}-${process.arch}.v8cache`,
      oldTemporary: `bin-${"1".repeat(24)}-run-${process.version}-${process.arch}.v8cache.4242.tmp`,
      recentCache: `bin-${"2".repeat(24)}-run-${process.version}-${process.arch}.v8cache`,
      oldOther: "notes.txt"
    }
    for (const [what, name] of Object.entries(entries)) {
      fs.writeFileSync(path.join(t.cacheDir, name), "x")
      if (what !== "recentCache") fs.utimesSync(path.join(t.cacheDir, name), old, old)
    }
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:undefined\n")
    const left = fs.readdirSync(t.cacheDir)
    expect(left).toContain(entries.recentCache)
    expect(left).toContain(entries.oldOther)
    expect(left).not.toContain(entries.oldCache)
    expect(left).not.toContain(entries.oldTemporary)
    expect(cacheFiles(t.cacheDir)).toHaveLength(2)
  })

  it("is written before the bundle changes a V8 flag, whose change would make V8 refuse it at the next start", () => {
    const t = bundleIn("hello")
    const changeFlag = `globalThis[Symbol.for("planckclaw/beforeV8FlagsChange")]?.()\n` +
      `require("node:v8").setFlagsFromString("--no-allocation-site-pretenuring")\n`
    fs.appendFileSync(t.bundle, changeFlag)
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:undefined\n")
    expect(start(t.bundle, t.xdg)).toBe("hello bin.cjs true\nrejected:false\n")
  })

  it("made by the built `planckclaw run`, is used by its next start, not made again", async () => {
    // A copy of the command with its run-only bundle, so no other test's start touches this cache.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-code-cache-run-"))
    dirs.push(dir)
    fs.cpSync(path.join(repo, "bin"), path.join(dir, "bin"), { recursive: true })
    fs.cpSync(path.join(repo, "package.json"), path.join(dir, "package.json"))
    fs.mkdirSync(path.join(dir, "dist", "cli"), { recursive: true })
    fs.cpSync(path.join(repo, "dist", "cli", "run.cjs"), path.join(dir, "dist", "cli", "run.cjs"))
    const cacheDir = path.join(dir, "dist", "cli", "code-cache")
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, XDG_CACHE_HOME: path.join(dir, "xdg") }
    /** Starts the agent, waits until it has changed V8's flags (said under --debug), stops it. */
    const runOnce = (round: number) =>
      new Promise<string>((resolve, reject) => {
        const agent = child.spawn(process.execPath, [path.join(dir, "bin", "planckclaw"), "run", "--debug", "--bridge", "none", "--brain", "none", "--claw", "none"], {
          env: { ...env, PLANCKCLAW_DIR: path.join(dir, `memory-${round}`), PLANCKCLAW_RUN_DIR: path.join(dir, `run-${round}`) },
          stdio: ["ignore", "ignore", "pipe"]
        })
        let stderr = ""
        agent.stderr.setEncoding("utf8").on("data", (chunk: string) => {
          stderr += chunk
          if (stderr.includes("pretenuring turned off")) agent.kill("SIGTERM")
        })
        agent.on("error", reject)
        agent.on("exit", () => resolve(stderr))
      })
    const inodes = () => cacheFiles(cacheDir).map((name) => fs.statSync(path.join(cacheDir, name)).ino)
    expect(await runOnce(1)).toContain("pretenuring turned off")
    const made = inodes()
    expect(made).toHaveLength(1)
    await runOnce(2)
    // A refused cache is written again, through a new file and a rename.
    expect(inodes()).toEqual(made)
    expect(fs.readdirSync(cacheDir).filter((name) => name.endsWith(".tmp"))).toEqual([])
  })
})
