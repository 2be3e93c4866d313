/**
 * What the package asks of a host that embeds it: effect and the @effect
 * packages the library imports at run time are peer dependencies over the
 * 4.1 line (the host's copies are used, never a second effect), the exact
 * pins are this repository's devDependencies, and the command line's own
 * modules (effect/cli) are bundled into dist/cli, never imported by the
 * library.
 *
 * The install itself (npm pack, a host on another 4.1 patch, `npm ls
 * effect`, tsc on the README example) needs the registry, so it is done by
 * hand: see the report of issue 10, B1.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

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
    for (const needed of ["LICENSE", "bin/planckclaw", "bin/code-cache.mjs", "bin/code-cache.cjs", "bin/package.json", "dist/cli/bin.cjs", "dist/cli/run.cjs", "dist/cli/HelpText.js", "dist/index.js", "config.env.example", "memory/soul.md"]) {
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
})
