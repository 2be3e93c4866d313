/**
 * What the package asks of a host that embeds it: effect and the @effect
 * packages the library imports at run time are peer dependencies over the
 * 4.1 line (the host's copies are used, never a second effect), the exact
 * pins are this repository's devDependencies, and the command line's own
 * modules (effect/cli) are bundled into dist/cli, never imported by the
 * library.
 *
 * The peers are optional: the command bundles what it needs of them, so a
 * global install (tested here, against a registry on loopback) fetches none (effect alone is 69 MB);
 * a host has its own (test/HostProject.test.ts installs one).
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AnthropicServer from "./support/AnthropicServer.js"
import * as Cli from "./support/Cli.js"
import * as LoopbackRegistry from "./support/LoopbackRegistry.js"
import { eventually, sandbox, within } from "./support/Sandbox.js"

const root = path.join(import.meta.dirname, "..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
  devDependencies: Record<string, string>
}

/** Folders only the command line imports (src/cli/: the entries, the commands, the doctor), and memory in PostgreSQL, which index.ts does not export: bundled into dist/cli. */
const cliOnlyFolders = ["cli/", "memory/sql/"]

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(path.join(dir, entry.name))
      : entry.name.endsWith(".ts") ? [path.join(dir, entry.name)] : []
  )

/** Modules of packages a file imports at run time (`import type` is erased). */
const runtimeModules = (file: string): Array<string> =>
  [...fs.readFileSync(file, "utf8").matchAll(/^(?:import|export)(?!\s+type\b)[^"]*?from\s+"([^".][^"]*)"/gm)]
    .map((match) => match[1]!)
    .filter((specifier) => !specifier.startsWith("node:"))

/** Packages a file imports at run time. */
const runtimePackages = (file: string): Array<string> =>
  runtimeModules(file).map((specifier) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/"))

describe("packaging", () => {
  const library = sourceFiles(path.join(root, "src")).filter((file) => {
    const relative = path.relative(path.join(root, "src"), file)
    return !cliOnlyFolders.some((folder) => relative.startsWith(folder))
  })
  const used = new Set(library.flatMap(runtimePackages))

  it("every package the library imports at run time is a peer (effect's family) or a dependency", () => {
    for (const name of used) {
      expect(name in pkg.peerDependencies || name in pkg.dependencies, name).toBe(true)
    }
    expect([...used].filter((name) => name === "effect" || name.startsWith("@effect/")).sort()).toEqual(
      Object.keys(pkg.peerDependencies).sort()
    )
  })

  it("peers range over the 4.1 line, and this repository pins a version inside each range", () => {
    expect(pkg.peerDependencies["effect"]).toMatch(/^~4\.1\.\d+$/)
    for (const [name, range] of Object.entries(pkg.peerDependencies)) {
      const floor = /^~(\d+)\.(\d+)\.(\d+)$/.exec(range)
      expect(floor, `${name} ${range}`).not.toBeNull()
      const pin = /^(\d+)\.(\d+)\.(\d+)$/.exec(pkg.devDependencies[name] ?? "")
      expect(pin, name).not.toBeNull()
      expect([pin![1], pin![2]], name).toEqual([floor![1], floor![2]])
      expect(Number(pin![3]), name).toBeGreaterThanOrEqual(Number(floor![3]))
      expect(pkg.dependencies[name], name).toBeUndefined()
    }
  })

  it("the command line's modules are bundled, never imported by the library", () => {
    const isCli = (module: string) => module.startsWith("effect/cli/") || module.startsWith("@effect/cli")
    const cli = sourceFiles(path.join(root, "src", "cli"))
    expect(cli.flatMap(runtimeModules).filter(isCli).length).toBeGreaterThan(0)
    expect(library.flatMap(runtimeModules).filter(isCli)).toEqual([])
    expect([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)].filter(isCli)).toEqual([])
    expect(Object.keys(pkg.dependencies)).toEqual(["discord.js"])
  })
})

/** What `npm pack` would ship (no registry, no scripts), from the built tree. */
const packed = (): Array<string> => {
  const output = child.execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"]
  })
  return (JSON.parse(output) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((file) => file.path)
}

describe("the published package (npm pack, after npm run build)", () => {
  const meta = pkg as unknown as {
    license: string
    engines: { node: string }
    allowScripts: Record<string, boolean>
  }

  it("ships the command, its templates and a LICENSE matching package.json; no settings, no memory", () => {
    const files = packed()
    for (const needed of ["LICENSE", "bin/planckclaw", "bin/code-cache.mjs", "bin/code-cache.cjs", "bin/package.json", "dist/cli/bin.cjs", "dist/cli/run.cjs", "dist/cli/undici.cjs", "dist/cli/HelpText.js", "dist/index.js", "config.env.example", "memory/soul.md"]) {
      expect(files, needed).toContain(needed)
    }
    for (const claw of fs.readdirSync(path.join(root, "claws"))) expect(files).toContain(`claws/${claw}`)
    expect(files.filter((file) => /(^|\/)config\.env$|history\.jsonl|summary\.md|tsbuildinfo|\.v8cache/.test(file))).toEqual([])
    expect(meta.license).toBe("MIT")
    expect(fs.readFileSync(path.join(root, "LICENSE"), "utf8")).toMatch(/^MIT License\n/)

    // Every source map points at files the package ships.
    const maps = files.filter((file) => file.endsWith(".map"))
    expect(maps.length).toBeGreaterThan(0)
    for (const map of maps) {
      const { sources } = JSON.parse(fs.readFileSync(path.join(root, map), "utf8")) as { sources: Array<string> }
      for (const source of sources) expect(files, `${map} -> ${source}`).toContain(path.posix.join(path.posix.dirname(map), source))
    }

    // The command runs from its bundles: of the command's own modules only the help's (bin/planckclaw reads it
    // without a bundle) ship, and every module shipped finds each module it imports.
    expect(files.filter((file) => file.startsWith("dist/cli/") && !file.endsWith(".cjs")).sort())
      .toEqual(["dist/cli/HelpCommands.js", "dist/cli/HelpConfig.js", "dist/cli/HelpText.js"])
    for (const module of files.filter((file) => /\.(js|d\.ts)$/.test(file) && file.startsWith("dist/"))) {
      const text = fs.readFileSync(path.join(root, module), "utf8")
      for (const [, imported] of text.matchAll(/(?:from|import)\s*\(?\s*"(\.\.?\/[^"]+)"/g)) {
        expect(files, `${module} imports ${imported}`).toContain(path.posix.join(path.posix.dirname(module), imported!))
      }
    }
  })

  it("claims the Node lines it is tested on, and reviews every install script in the lock file", () => {
    expect(meta.engines.node).toBe(">=22.19")
    // The suite runs on Node 24, the command-line tests on Node 22 too (.ci/run).
    expect(["22", "24"]).toContain(process.versions.node.split(".")[0])
    const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
      packages: Record<string, { hasInstallScript?: boolean }>
    }
    const withScripts = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript === true)
      .map(([where]) => where.replace(/^.*node_modules\//, ""))
    expect(withScripts.length).toBeGreaterThan(0)
    for (const name of withScripts) expect(Object.keys(meta.allowScripts), name).toContain(name)
  })

  it("the container runs as a non-root user with the home as its volume; the systemd unit too", () => {
    const docker = fs.readFileSync(path.join(root, "Dockerfile"), "utf8")
    const home = /PLANCKCLAW_HOME=(\S+)/.exec(docker)?.[1]
    expect(home).toBeDefined()
    expect(docker).toContain(`VOLUME ["${home}"]`)
    const user = [...docker.matchAll(/^USER (\S+)$/gm)].map((match) => match[1])
    expect(user.at(-1)).toBe("node")
    const unit = fs.readFileSync(path.join(root, "contrib/planckclaw.service"), "utf8")
    expect(unit).toMatch(/^User=planckclaw$/m)
    expect(unit).toMatch(/^Environment=PLANCKCLAW_HOME=\/var\/lib\/planckclaw$/m)
    expect(unit).toMatch(/^ExecStart=\S+planckclaw run --bridge discord$/m)
  })

  it("the container builds from every folder the build reads, on a Node the command starts on", () => {
    const docker = fs.readFileSync(path.join(root, "Dockerfile"), "utf8")
    // bin/planckclaw refuses a Node below engines (22.19): an image on an older one would never start.
    const majors = [...docker.matchAll(/^FROM node:(\d+)/gm)].map((match) => Number(match[1]))
    expect(majors.length).toBeGreaterThan(0)
    for (const major of majors) expect(major, `FROM node:${major}`).toBeGreaterThanOrEqual(22)
    // `npm run build` compiles tsconfig.build.json's folders, then build/bundle.mjs imports from ../bin/ and bundles console/.
    const bundle = fs.readFileSync(path.join(root, "build/bundle.mjs"), "utf8")
    const include = (JSON.parse(fs.readFileSync(path.join(root, "tsconfig.build.json"), "utf8")) as { include: Array<string> }).include
    const reads = new Set(["build", ...include, ...[...bundle.matchAll(/from "\.\.\/(\w+)\//g)].map((match) => match[1]!),
      ...[...bundle.matchAll(/"(\w+)\/src\/[\w/]+\.ts"/g)].map((match) => match[1]!)])
    expect([...reads]).toEqual(expect.arrayContaining(["src", "bin", "console"]))
    const buildStage = docker.split(/^FROM /m)[1]!
    for (const folder of reads) expect(buildStage, `the build stage copies ${folder}/`).toMatch(new RegExp(`^COPY ${folder} ${folder}$`, "m"))
  })
})

/** npm as a user runs it: none of the npm_config_* this repository's npm passes its scripts (its .npmrc's legacy-peer-deps). */
const userNpmEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key))),
  ...extra
})

describe("npm install -g of the packed tarball (after npm run build)", () => {
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-global-"))
  const installed = path.join(prefix, "lib", "node_modules", "planckclaw")
  const command = path.join(prefix, "bin", "planckclaw")
  let installOutput = ""
  let packedScripts: Array<string> = []
  let manifestRestored = false

  beforeAll(async () => {
    // With its scripts, as a publisher packs: prepack takes `prepare` out of the packed manifest (build/pack-manifest.mjs).
    const before = fs.readFileSync(path.join(root, "package.json"), "utf8")
    const packed = child.execFileSync("npm", ["pack", "--json", "--pack-destination", prefix], { cwd: root, encoding: "utf8", env: userNpmEnv() })
    packedScripts = Object.keys((JSON.parse(child.execFileSync("tar", ["-xzOf", path.join(prefix, (JSON.parse(packed.slice(packed.indexOf("["))) as Array<{ filename: string }>)[0]!.filename), "package/package.json"], { encoding: "utf8" })) as { scripts: object }).scripts)
    manifestRestored = fs.readFileSync(path.join(root, "package.json"), "utf8") === before
    const tarball = path.join(prefix, (JSON.parse(packed.slice(packed.indexOf("["))) as Array<{ filename: string }>)[0]!.filename)
    // Its dependencies from a registry on loopback serving this lock file's packages (LoopbackRegistry.ts): nothing beyond it is reached.
    const registry = await LoopbackRegistry.start(root)
    try {
      const install = await registry.npm(["install", "-g", "--prefix", prefix, tarball], {
        cwd: prefix,
        env: userNpmEnv(),
        cache: path.join(prefix, ".npm-cache")
      })
      installOutput = `${install.stdout}\n${install.stderr}`
    } finally {
      await registry.close()
    }
    expect(registry.unknown).toEqual([])
    fs.rmSync(tarball)
    fs.rmSync(path.join(prefix, ".npm-cache"), { recursive: true, force: true })
  }, 120_000)
  afterAll(() => fs.rmSync(prefix, { recursive: true, force: true }))

  it("installs at most 40 MB: discord.js beside the bundles, none of the optional peers (effect, @effect/*, redis)", () => {
    const kilobytes = Number(child.execFileSync("du", ["-sk", prefix], { encoding: "utf8" }).split("\t")[0])
    console.log(`npm install -g: ${(kilobytes / 1024).toFixed(1)} MB`)
    expect(kilobytes).toBeGreaterThan(1024)
    expect(kilobytes).toBeLessThanOrEqual(40 * 1024)
    const modules = fs.readdirSync(path.join(installed, "node_modules"))
    expect(modules).toContain("discord.js")
    for (const peer of ["effect", "@effect", "redis", "pg"]) expect(modules, peer).not.toContain(peer)
    expect(installOutput).not.toMatch(/redis|ERESOLVE|peer dep/i)
  })

  it("asks the installer to allow no install script: the packed manifest has no prepare, and the checkout's is put back as it was", () => {
    expect(packedScripts).not.toContain("prepare")
    expect(packedScripts.filter((name) => /^(pre|post)?install$|^prepare$/.test(name))).toEqual([])
    expect(manifestRestored).toBe(true)
    expect(fs.existsSync(path.join(root, ".package.json.packing"))).toBe(false)
    expect(installOutput).not.toMatch(/prepare|install script|allow-scripts/i)
  })

  it.live("run answers, serve serves and stops, doctor passes and usage counts, from the global install", () =>
    Effect.gen(function*() {
      const server = yield* AnthropicServer.make(AnthropicServer.echo)
      const box = yield* sandbox({ ANTHROPIC_API_KEY: "test-key-not-secret", ANTHROPIC_BASE_URL: server.url })
      const env = box.envWith({ PLANCKCLAW_HOME: box.dir, PLANCKCLAW_AGENTS_DIR: box.path("agents") })
      const options = { cwd: box.dir, env, bin: command }

      const ran = yield* Cli.run(["run"], { ...options, input: "hello from the global install\n" })
      expect(ran).toMatchObject({ code: 0, stdout: "re: hello from the global install\n" })

      const serve = yield* Cli.start(["serve", "--http", "127.0.0.1:0"], options)
      const port = yield* eventually("serve to say where it listens", () => /HTTP API on 127\.0\.0\.1:(\d+)/.exec(Effect.runSync(serve.stderrSoFar))?.[1])
      const answer = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/v1/agents/alice/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text: "hi from serve" })
        }).then((response) => response.json())
      )
      expect(answer).toEqual({ reply: "re: hi from serve", stored: true })
      serve.process.kill("SIGTERM")
      expect((yield* within("serve to exit after SIGTERM")(serve.done)).code).toBe(0)

      const doctor = yield* Cli.run(["doctor"], options)
      expect(doctor.stdout).not.toContain("✘")
      expect(doctor.code).toBe(0)

      const usage = yield* Cli.run(["usage"], options)
      expect(usage.code).toBe(0)
      expect(usage.stdout).toMatch(/^\d{4}-\d\d-\d\d\s+claude-test\s+1\s/m)
    }), 60_000)
})
