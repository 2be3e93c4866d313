/**
 * An npm registry on loopback for the install tests (test/Packaging.test.ts,
 * test/HostProject.test.ts): it serves every package this repository's
 * package-lock.json names, at the lock's versions, as npm's registry would
 * (a packument per name, a tarball per version), the tarballs taken by
 * their integrity from npm's own cache, which `npm ci` filled.
 *
 * Why not `npm install --offline`: `npm ci` caches the tarballs of a lock
 * file but not the registry's documents about each package, and an offline
 * install needs those; on a fresh machine none are cached. Against this
 * registry, with a cache of its own and npm's proxy a closed port (only
 * loopback goes direct), an install reaches nothing beyond this process.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"

interface LockEntry {
  readonly name?: string
  readonly version?: string
  readonly integrity?: string
  readonly link?: boolean
  readonly [field: string]: unknown
}

/** The fields of a lock entry a registry's version document carries too (what npm resolves and installs by). */
const manifestFields = [
  "dependencies",
  "optionalDependencies",
  "peerDependencies",
  "peerDependenciesMeta",
  "bin",
  "engines",
  "os",
  "cpu",
  "libc",
  "hasInstallScript",
  "license",
  "deprecated"
] as const

export interface LoopbackRegistry {
  /**
   * The packages asked for that the lock file does not name (an install that
   * wanted more than the lock has), but for optional peers of its packages:
   * npm looks those up (ws's bufferutil) and installs none.
   */
  readonly unknown: ReadonlyArray<string>
  /**
   * `npm ARGS` in `cwd` against this registry: `env`, then this registry, a
   * cache of its own in `cache` and every other address through a closed
   * proxy. A failure says which tarballs npm's cache lacked (cleaned since `npm ci`).
   */
  readonly npm: (
    args: ReadonlyArray<string>,
    options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly cache: string }
  ) => Promise<{ readonly stdout: string; readonly stderr: string }>
  readonly close: () => Promise<void>
}

/** Where npm's cache keeps the content of `integrity` (cacache's content-v2 layout). */
const contentPath = (cache: string, integrity: string): string => {
  const [algorithm, digest] = integrity.split("-", 2) as [string, string]
  const hex = Buffer.from(digest, "base64").toString("hex")
  return path.join(cache, "_cacache", "content-v2", algorithm, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4))
}

/** The package name of a lock entry's path: the part after its last `node_modules/`. */
const nameOf = (key: string, entry: LockEntry): string =>
  entry.name ?? key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length)

/** Nothing listens on port 9 (discard): whatever npm sends through this proxy fails at once. */
export const closedPort = "http://127.0.0.1:9/"

/**
 * Starts the registry over `root`'s package-lock.json and the cache of the
 * npm running this test: asked with this process's environment, whose
 * npm_config_cache (or NPM_CONFIG_CACHE) is the one `npm ci` filled.
 */
export const start = async (root: string): Promise<LoopbackRegistry> => {
  const npmCache = child.execFileSync("npm", ["config", "get", "cache"], { encoding: "utf8", env: process.env }).trim()
  const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
    readonly packages: Record<string, LockEntry>
  }
  // name → version → the entry (a package nested at several places is the same version's document).
  const byName = new Map<string, Map<string, LockEntry>>()
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (key === "" || entry.link === true || entry.version === undefined || entry.integrity === undefined) continue
    const name = nameOf(key, entry)
    const versions = byName.get(name) ?? new Map<string, LockEntry>()
    versions.set(entry.version, entry)
    byName.set(name, versions)
  }
  const optionalPeers = new Set(Object.values(lock.packages).flatMap((entry) =>
    Object.entries((entry.peerDependenciesMeta ?? {}) as Record<string, { readonly optional?: boolean }>)
      .filter(([, meta]) => meta.optional === true)
      .map(([name]) => name)
  ))
  const unknown: Array<string> = []
  const missing: Array<string> = []

  const server = http.createServer((request, response) => {
    const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const url = decodeURIComponent((request.url ?? "/").split("?")[0]!)
    // `/NAME/-/BASE-VERSION.tgz`: the version is what follows the package's base name (it may hold dashes: 1.0.0-rc-1).
    const tarball = /^\/(.+)\/-\/([^/]+)\.tgz$/.exec(url)
    if (tarball !== null) {
      const name = tarball[1]!
      const base = name.startsWith("@") ? name.split("/")[1]! : name
      const version = tarball[2]!.startsWith(`${base}-`) ? tarball[2]!.slice(base.length + 1) : undefined
      const entry = version === undefined ? undefined : byName.get(name)?.get(version)
      const file = entry?.integrity === undefined ? undefined : contentPath(npmCache, entry.integrity)
      if (file === undefined || !fs.existsSync(file)) {
        missing.push(url)
        response.writeHead(404, { "content-type": "application/json" })
        response.end(JSON.stringify({ error: `${url}: not in npm's cache at ${npmCache} (run npm ci first)` }))
        return
      }
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": fs.statSync(file).size })
      fs.createReadStream(file).pipe(response)
      return
    }
    const name = url.slice(1)
    const versions = byName.get(name)
    if (versions === undefined) {
      if (!optionalPeers.has(name)) unknown.push(name)
      response.writeHead(404, { "content-type": "application/json" })
      response.end(JSON.stringify({ error: `${name} is not in package-lock.json` }))
      return
    }
    const documents = Object.fromEntries([...versions].map(([version, entry]) => {
      const fields = Object.fromEntries(manifestFields.filter((field) => entry[field] !== undefined).map((field) => [field, entry[field]]))
      const base = name.startsWith("@") ? name.split("/")[1]! : name
      return [version, { name, version, ...fields, dist: { integrity: entry.integrity, tarball: `${address}/${name}/-/${base}-${version}.tgz` } }]
    }))
    const newest = [...versions.keys()].sort((a, b) => a.localeCompare(b, "en", { numeric: true })).at(-1)!
    response.writeHead(200, { "content-type": "application/json" })
    response.end(JSON.stringify({ name, "dist-tags": { latest: newest }, versions: documents }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  // npm's settings for an install against it.
  const npmEnv = (cache: string) => ({
    npm_config_registry: url,
    npm_config_cache: cache,
    npm_config_proxy: closedPort,
    npm_config_https_proxy: closedPort,
    npm_config_noproxy: "127.0.0.1",
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false"
  })
  return {
    npm: (args, { cache, cwd, env }) =>
      run("npm", args, { cwd, env: { ...env, ...npmEnv(cache) } }).catch((error: unknown) => {
        const why = missing.length === 0 ? "" : `\nnot in npm's cache at ${npmCache} (run npm ci again): ${missing.join(", ")}`
        return Promise.reject(new Error(`${error instanceof Error ? error.message : String(error)}${why}`))
      }),
    unknown,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** Runs a command to its end without blocking this process (the registry answers meanwhile); throws with its output when it fails. */
const run = (command: string, args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv }) =>
  new Promise<{ readonly stdout: string; readonly stderr: string }>((resolve, reject) => {
    const spawned = child.spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    spawned.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text))
    spawned.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text))
    spawned.once("error", reject)
    spawned.once("close", (code) =>
      code === 0 ? resolve({ stdout, stderr }) : reject(new Error(`${command} ${args.join(" ")} exited ${code}\n${stdout}\n${stderr}`)))
  })
