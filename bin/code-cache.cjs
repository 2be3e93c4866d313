"use strict"
/**
 * Runs the command line's bundle (one CommonJS script, dist/cli/bin.cjs) with
 * a V8 code cache: the functions a start compiled last time are read back as
 * bytecode instead of being parsed and compiled again, which was most of the
 * start-up time. Node 20 has no code cache for ES modules, hence the script.
 * Kept (issue: replace unless it costs more than 10 %): a 400 kB bundle of
 * effect/cli and a command tree started in 273 ms uncompiled, 281 ms under
 * Node's own module.enableCompileCache() and 233 ms through this cache
 * (medians of 20, Node 24.22, 2-core VM, `node -e 0` 104 ms): 15 % slower
 * without it, on a bundle a fifth of bin.cjs.
 * CommonJS itself, like bin/planckclaw, so a start does not set up Node's ES
 * module loader (bin/code-cache.mjs re-exports it for ES modules).
 *
 * The cache is a file per bundle (its SHA-256: written by the build in the
 * bundle's first line, see build/bundle.mjs, with the file's size and
 * modification time beside it, so an edited bundle gets a cache of its own;
 * computed at start for a bundle without that line), Node version, architecture
 * and command (`run` compiles other functions than `tools`, and a run of
 * the terminal others than one with no bridges: cacheCommand), looked for next
 * to the bundle (dist/cli/code-cache/) and then in the user's cache directory
 * ($XDG_CACHE_HOME/planckclaw or ~/.cache/planckclaw), so a read-only install
 * works too. V8 refuses a cache made under other flags; a missing or refused
 * cache is made again once the start-up work is done, in the first of those
 * directories that can be written, where caches not written for 30 days
 * are then removed (pruneStale). Nothing about the cache can stop a start:
 * without one the bundle is compiled as usual.
 *
 * V8 also refuses a cache made after the process changed a flag of its own
 * (`v8.setFlagsFromString`, as `run` and `serve` do once ready: see
 * src/runtime/process/V8Flags.ts), so a cache still to be written is written just
 * before the first such change (beforeFlagsChange), or else once settled.
 */
const { isAscii } = require("node:buffer")
const fs = require("node:fs")
const os = require("node:os")
const path = require("node:path")
const { performance } = require("node:perf_hooks")
const { fileURLToPath } = require("node:url")
const vm = require("node:vm")

// The CommonJS loader's Module (what node:module exports), without loading the public node:module,
// which brings pieces of the ES module loader with it.
const { createRequire } = module.constructor

/** Where a cache is looked for, in order; it is written to the first that can be. */
const cacheDirectories = (bundle, environment = process.env) => {
  const xdg = environment.XDG_CACHE_HOME
  const user = xdg !== undefined && path.isAbsolute(xdg) ? xdg : attempt(() => path.join(os.homedir(), ".cache"))
  return [path.join(path.dirname(bundle), "code-cache"), ...(user ? [path.join(user, "planckclaw")] : [])]
}

/** The first line build/bundle.mjs gives a bundle: the SHA-256 of the rest, so a start need not compute it. */
const hashLine = /^\/\/ planckclaw-bundle-sha256:([0-9a-f]{64})\n/

/**
 * What identifies the bundle's code: the hash in its first line, with the
 * file's size and modification time (an edit after the build changes
 * those), or, without that line, its own SHA-256 (node:crypto is then loaded here).
 */
const bundleKey = (bundleBytes, stat) => {
  const line = hashLine.exec(bundleBytes.latin1Slice(0, 100))
  if (line !== null && stat !== undefined) {
    return `${line[1].slice(0, 24)}-${stat.size.toString(36)}-${Math.round(stat.mtimeMs * 1000).toString(36)}`
  }
  return require("node:crypto").createHash("sha256").update(bundleBytes).digest("hex").slice(0, 24)
}

/**
 * Node's own options (its command line's and NODE_OPTIONS) as a short key,
 * empty without any (the usual case). V8 refuses a cache made under other
 * flags, so starts that alternate options (a service with NODE_OPTIONS, a
 * shell without) keep a cache each instead of refusing and rewriting one.
 */
const optionsKey = (execArgv = process.execArgv, nodeOptions = process.env.NODE_OPTIONS) => {
  const text = [...execArgv, nodeOptions ?? ""].join("\n").trim()
  if (text === "") return ""
  let hash = 0x811c9dc5 // FNV-1a: a start loads no node:crypto for it
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return `o${(hash >>> 0).toString(36)}-`
}

/**
 * The cache file's name: what the cached code is valid for (`stat`: the
 * bundle's fs.Stats, see bundleKey; `options`: see optionsKey).
 */
const cacheName = (bundleBytes, command, stat, options = optionsKey()) => {
  const word = /^[a-z][a-z-]{0,20}$/.test(command ?? "") ? command : "other"
  return `bin-${bundleKey(bundleBytes, stat)}-${word}-${options}${process.version}-${process.arch}.v8cache`
}

/** `f()`, or undefined when it throws: the cache is an optimisation, never a reason to fail. */
const attempt = (f) => {
  try {
    return f()
  } catch {
    return undefined
  }
}

/** The `size` bytes of the file open at `fd`, into `spare` when they fit (see runBundle), else into a buffer of their own. */
const readWhole = (fd, size, spare) => {
  const into = size <= spare.length ? spare : Buffer.allocUnsafeSlow(size)
  let read = 0
  for (let n = -1; read < size && n !== 0; read += n) n = fs.readSync(fd, into, read, size - read, read)
  return into.subarray(0, read)
}

/** Reads the file at `file` whole (readWhole); undefined when it cannot be read. */
const readFileInto = (file, spare) =>
  attempt(() => {
    const fd = fs.openSync(file, "r")
    try {
      return readWhole(fd, fs.fstatSync(fd).size, spare)
    } finally {
      fs.closeSync(fd)
    }
  })

const readCache = (directories, name, spare) => {
  for (const directory of directories) {
    const data = readFileInto(path.join(directory, name), spare)
    if (data !== undefined) return data
  }
  return undefined
}

const bridgeCodes = {
  "--bridge": { cli: "c", discord: "d", none: "n" },
  "--brain": { anthropic: "a", openai: "o", none: "n" },
  "--claw": { scripts: "s", none: "n" }
}

/**
 * The command a start's cache is kept under (see cacheName): the command,
 * and for a plain `run` line also the bridges it starts, one letter each
 * (bridge, brain, claws: a built-in's initial, `n` for none, `x` for an
 * executable, `-` for the brain the settings choose), as each compiles
 * other functions: a cache made by `run --bridge none --brain none --claw
 * none` lacks the terminal's, the brain's and the claws'. Any other line
 * of `run` is just `run`. The plain form is RunProgram.plainRunOptions's
 * (each flag at most once), so bin/planckclaw can tell by it which lines the
 * run-only bundle runs (forRunBundle).
 */
const cacheCommand = (args) => {
  if (args[0] !== "run") return args[0]
  const chosen = { "--bridge": "c", "--brain": "-", "--claw": "s" }
  const seen = new Set()
  for (let i = 1; i < args.length; i++) {
    const flag = args[i]
    // Neither chooses code: each, once, keeps the line plain.
    if ((flag === "--debug" || flag === "--verbose") && !seen.has(flag)) {
      seen.add(flag)
      continue
    }
    const value = args[i + 1]
    // The model chooses no code: any name, once, keeps the line plain.
    if (flag === "--model" && !seen.has(flag) && value !== undefined && value !== "" && !value.startsWith("-")) {
      seen.add(flag)
      i++
      continue
    }
    if (!Object.hasOwn(chosen, flag) || seen.has(flag) || value === undefined || value === "" || value.startsWith("-")) return "run"
    seen.add(flag)
    chosen[flag] = Object.hasOwn(bridgeCodes[flag], value) ? bridgeCodes[flag][value] : "x"
    i++
  }
  return `run-${chosen["--bridge"]}${chosen["--brain"]}${chosen["--claw"]}`
}

/**
 * Whether `args` is a line the run-only bundle (dist/cli/run.cjs) runs: a
 * `run` line in the plain form (see cacheCommand) with any bridge but
 * Discord's, which that bundle leaves out (build/bundle.mjs).
 */
const forRunBundle = (args) => {
  const command = args[0] === "run" ? cacheCommand(args) : "run"
  return command !== "run" && !command.startsWith("run-d")
}

/** A cache file, or a temporary one a start stopped while writing (see writeCache). */
const cacheEntry = /^bin-[0-9a-z.-]+\.v8cache(\.\d+\.tmp)?$/
/** Caches not written for this long are removed when another is written: other builds', most likely. */
const staleAfterMs = 30 * 24 * 60 * 60 * 1000

/**
 * Removes the caches of `directory` older than staleAfterMs but `kept`.
 * Each build (and each edit of a bundle) has caches of its own, and a user
 * cache directory outlives installs; a cache in use is never rewritten, so
 * an old one may still be in use: it is then written again once, at the
 * next start.
 */
const pruneStale = (directory, kept) => {
  const now = Date.now()
  for (const entry of attempt(() => fs.readdirSync(directory)) ?? []) {
    if (entry === kept || !cacheEntry.test(entry)) continue
    const file = path.join(directory, entry)
    const stat = attempt(() => fs.lstatSync(file))
    if (stat !== undefined && stat.isFile() && now - stat.mtimeMs > staleAfterMs) attempt(() => fs.unlinkSync(file))
  }
}

/** Writes through a temporary file and a rename, so a reader never sees half a cache. */
const writeCache = (directories, name, data) => {
  for (const directory of directories) {
    const file = path.join(directory, name)
    const temporary = `${file}.${process.pid}.tmp`
    const written = attempt(() => {
      fs.mkdirSync(directory, { recursive: true, mode: 0o755 })
      fs.writeFileSync(temporary, data)
      fs.renameSync(temporary, file)
      return true
    })
    if (written) {
      pruneStale(directory, name)
      return file
    }
    attempt(() => fs.unlinkSync(temporary))
  }
  return undefined
}

/**
 * Where the bundle finds the function to call before it changes a V8 flag
 * (src/runtime/process/V8Flags.ts): it writes the caches still to be written, while
 * V8's flags are still the ones the next start will have.
 */
const beforeFlagsChange = Symbol.for("planckclaw/beforeV8FlagsChange")
const unsaved = new Set()
const saveAllNow = () => {
  for (const save of [...unsaved]) save()
}

/**
 * Calls `save` once the process has settled after start-up (the event loop
 * mostly idle over a quarter second), at the latest after 10 s, at exit or
 * before a V8 flag changes, so the cache holds what the start compiled.
 * The timer keeps nothing alive.
 */
const whenSettled = (save) => {
  let done = false
  const once = () => {
    if (done) return
    done = true
    unsaved.delete(once)
    if (unsaved.size === 0 && globalThis[beforeFlagsChange] === saveAllNow) delete globalThis[beforeFlagsChange]
    process.off("exit", once)
    save()
  }
  unsaved.add(once)
  globalThis[beforeFlagsChange] = saveAllNow
  process.once("exit", once)
  const started = performance.now()
  let last = performance.eventLoopUtilization()
  const check = () => {
    const now = performance.eventLoopUtilization()
    const busy = performance.eventLoopUtilization(now, last).utilization
    last = now
    if (busy < 0.2 || performance.now() - started > 10_000) once()
    else setTimeout(check, 250).unref()
  }
  setTimeout(check, 250).unref()
}

/**
 * Stack traces are formatted with function names only while the bundle's
 * modules load: effect's Utils formats one trace as it loads (to learn
 * whether a frame survives optimisation, from the names), and Node's own
 * formatting of that first trace cost a start milliseconds. Node's
 * formatter is kept under this key; the entries (src/cli/bin.ts,
 * src/cli/RunMain.ts) put it back before anything runs (src/runtime/StackTraces.ts),
 * `runBundle` does at the latest.
 */
const formatterKey = Symbol.for("planckclaw/prepareStackTrace")

const namesOnly = (error, frames) =>
  `${error}${frames.map((frame) => `\n    at ${frame.getFunctionName() ?? "<anonymous>"}`).join("")}`

const restoreFormatter = () => {
  if (!Object.hasOwn(globalThis, formatterKey)) return
  const saved = globalThis[formatterKey]
  delete globalThis[formatterKey]
  if (saved === undefined) delete Error.prepareStackTrace
  else Error.prepareStackTrace = saved
}

/**
 * The function a bundle's code runs in, as Node's module wrapper with the
 * bundle's URL added. build/bundle.mjs writes the bundles inside it already
 * (after their hash line): V8 compiles one flat string, and a wrapper added
 * here would make it copy the whole source into a new one first.
 */
const wrapperHead = "(function (exports, require, module, __filename, __dirname, __bundle_url) {"
const wrapperTail = "\n})"

/** `code` in the wrapper (the build's: see above). */
const wrapBundle = (code) => `${wrapperHead}${code}${wrapperTail}`

/** The bundle's source as a script whose value is the wrapped function: as it is when the build wrapped it. */
const inWrapper = (source) => {
  const firstLine = hashLine.test(source.slice(0, 100)) ? source.indexOf("\n") + 1 : 0
  return source.startsWith(wrapperHead, firstLine) && source.endsWith(wrapperTail) ? source : wrapBundle(source)
}

/**
 * Compiles (from the cache when it fits) and runs the CommonJS bundle at
 * `url` (a file URL), as `module` (whose exports the caller may then read).
 */
const runBundle = (url, command = cacheCommand(process.argv.slice(2)), module = { exports: {} }) => {
  const bundle = fileURLToPath(url)
  const fd = fs.openSync(bundle, "r")
  let stat, spare, bytes
  try {
    stat = fs.fstatSync(fd)
    // Room for the cache as well (see below): pages never written cost nothing.
    spare = Buffer.allocUnsafeSlow(stat.size * 3)
    bytes = readWhole(fd, stat.size, spare)
  } finally {
    fs.closeSync(fd)
  }
  // esbuild writes ASCII (non-ASCII characters escaped): a one-byte string is cheaper to make and to hash.
  const source = isAscii(bytes) ? bytes.latin1Slice(0, bytes.length) : bytes.toString("utf8")
  const directories = attempt(() => cacheDirectories(bundle)) ?? []
  const name = attempt(() => cacheName(bytes, command, stat))
  // The source is a string of its own now, so the cache goes into the bundle's buffer, whose pages
  // the process has touched already: on a virtual machine each page touched for the first time
  // costs 10-20 µs (a fault the host serves), and the cache is a megabyte.
  const cached = name === undefined ? undefined : readCache(directories, name, spare)
  const script = new vm.Script(inWrapper(source), { filename: bundle, ...(cached === undefined ? {} : { cachedData: cached }) })
  if (name !== undefined && (cached === undefined || script.cachedDataRejected === true)) {
    whenSettled(() => attempt(() => writeCache(directories, name, script.createCachedData())))
  }
  globalThis[formatterKey] = Error.prepareStackTrace
  Error.prepareStackTrace = namesOnly
  try {
    script.runInThisContext().call(module.exports, module.exports, createRequire(bundle), module, bundle, path.dirname(bundle), String(url))
  } finally {
    restoreFormatter()
  }
  return script
}

module.exports = { cacheCommand, cacheDirectories, cacheName, forRunBundle, optionsKey, runBundle, wrapBundle }
