/**
 * What the package asks of a host that embeds it: effect and the @effect
 * packages the library imports at run time are peer dependencies over the
 * whole 3.22 line (the host's copies are used, never a second effect), the
 * exact pins are this repository's devDependencies, and the command line's
 * own packages (@effect/cli) are bundled into dist/cli, not required.
 *
 * The install itself (npm pack, a host on an earlier 3.22 patch, `npm ls
 * effect`, tsc on the README example) needs the registry, so it is done by
 * hand: see the report of issue 10, B1.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const root = path.join(import.meta.dirname, "..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
  devDependencies: Record<string, string>
}

/** Modules only the command line imports: esbuild bundles them into dist/cli. */
const cliOnly = new Set(["Cli.ts", "CliSettings.ts", "ServeCommand.ts", "MemoryCommand.ts", "bin.ts"])
/** Folders index.ts does not export (memory in PostgreSQL): reached from the command line only, so bundled too. */
const cliOnlyFolders = ["memory/sql/"]

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(path.join(dir, entry.name))
      : entry.name.endsWith(".ts") ? [path.join(dir, entry.name)] : []
  )

/** Packages a file imports at run time (`import type` is erased). */
const runtimePackages = (file: string): Array<string> =>
  [...fs.readFileSync(file, "utf8").matchAll(/^(?:import|export)(?!\s+type\b)[^"]*?from\s+"([^".][^"]*)"/gm)]
    .map((match) => match[1]!)
    .filter((specifier) => !specifier.startsWith("node:"))
    .map((specifier) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/"))

describe("packaging", () => {
  const library = sourceFiles(path.join(root, "src")).filter((file) => {
    const relative = path.relative(path.join(root, "src"), file)
    return !cliOnly.has(relative) && !cliOnlyFolders.some((folder) => relative.startsWith(folder))
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

  it("peers range over the whole 3.22 line, and this repository pins a version inside each range", () => {
    expect(pkg.peerDependencies["effect"]).toBe("~3.22.0")
    for (const [name, range] of Object.entries(pkg.peerDependencies)) {
      const floor = /^~(\d+)\.(\d+)\.0$/.exec(range)
      expect(floor, `${name} ${range}`).not.toBeNull()
      const pin = pkg.devDependencies[name]
      expect(pin, name).toMatch(new RegExp(`^${floor![1]}\\.${floor![2]}\\.\\d+$`))
      expect(pkg.dependencies[name], name).toBeUndefined()
    }
  })

  it("the command line's packages are bundled, not required of a host", () => {
    const cli = sourceFiles(path.join(root, "src")).filter((file) => cliOnly.has(path.basename(file)))
    expect(cli.flatMap(runtimePackages)).toContain("@effect/cli")
    expect(used.has("@effect/cli")).toBe(false)
    expect(pkg.dependencies["@effect/cli"]).toBeUndefined()
    expect(pkg.peerDependencies["@effect/cli"]).toBeUndefined()
    expect(Object.keys(pkg.dependencies)).toEqual(["discord.js"])
  })
})
