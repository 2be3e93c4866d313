/**
 * The two CommonJS bundles: dist/cli/bin.cjs (every command) and
 * dist/cli/run.cjs (a plain `run` line's own, smaller: no effect/cli, no
 * Discord bridge), from tsc's output in dist/. Each Node built-in is wrapped
 * once per bundle (build/shared-builtins.mjs). Each bundle's first line is
 * the SHA-256 of the rest, which keys its code cache (bin/code-cache.cjs),
 * so a start does not hash a megabyte; the rest is the code inside the
 * function it runs in (code-cache.cjs's wrapBundle), so a start compiles
 * the file's text as it is, without copying it into a wrapped string.
 *
 * Usage: node build/bundle.mjs
 */
import * as esbuild from "esbuild"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { wrapBundle } from "../bin/code-cache.mjs"
import { sharedBuiltins } from "./shared-builtins.mjs"

const common = {
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node22",
  outdir: "dist/cli",
  outExtension: { ".js": ".cjs" },
  external: ["discord.js"],
  define: { "import.meta.url": "__bundle_url" },
  minifySyntax: true,
  minifyWhitespace: true,
  logLevel: "warning"
}

/**
 * The run-only bundle leaves the Discord bridge out (bin/planckclaw starts
 * `run --bridge discord` from bin.cjs, see code-cache.cjs's forRunBundle):
 * Bridges.ts imports it with a dynamic import(), for which esbuild would wrap
 * every module it reaches, most of the bundle, in a lazily called
 * initialiser, which costs a start milliseconds of evaluation.
 */
let discordLeftOut = 0
const withoutDiscord = {
  name: "without-discord",
  setup(build) {
    build.onResolve({ filter: /\/interact\/discord\/DiscordInteract\.js$/ }, (args) => {
      if (args.kind !== "dynamic-import") return undefined
      discordLeftOut++
      return { path: "DiscordInteract", namespace: "left-out" }
    })
    build.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
      // Importing nothing (an import would be wrapped too): reaching it is a bug of the routing, said as such.
      contents: args.path === "McpClaws"
        ? `throw new Error("the MCP client is not in dist/cli/run.cjs: a run whose home has an mcp.json starts from dist/cli/bin.cjs")\n`
        : `throw new Error("the Discord bridge is not in dist/cli/run.cjs: bin/planckclaw starts run --bridge discord from dist/cli/bin.cjs")\n`,
      loader: "js"
    }))
  }
}

/**
 * The undici package, which the brains' HTTP client loads at its first
 * request (src/brain/BrainHttpClient.ts), is a bundle of its own,
 * dist/cli/undici.cjs, required then: inside run.cjs it made that file
 * 1.69 MB instead of 0.65 for every start to read. platform-node's
 * `import("./Undici.js")` becomes a module that requires it (an external
 * import() would not run: the bundles are compiled as scripts).
 */
const undiciApart = {
  name: "undici-apart",
  setup(build) {
    build.onResolve({ filter: /^\.\/Undici\.js$/ }, (args) =>
      args.kind === "dynamic-import" && /[\\/]@effect[\\/]platform-node[\\/]/.test(args.importer)
        ? { path: "undici.cjs", namespace: "undici-apart" }
        : undefined)
    build.onResolve({ filter: /^\.\/undici\.cjs$/ }, (args) => args.namespace === "undici-apart" ? { path: "./undici.cjs", external: true } : undefined)
    build.onLoad({ filter: /.*/, namespace: "undici-apart" }, () => ({ contents: `module.exports = require("./undici.cjs")\n`, loader: "js" }))
  }
}

/**
 * platform-node's HTTP client imports its WebSocket upgrade with import(),
 * which the brains never ask for; reached, it made esbuild wrap every module
 * it shares with the rest of run.cjs (Effect's core among them) in a lazily
 * called initialiser: about a hundred more for each start to evaluate that
 * way. Left out of run.cjs (an upgrade there is a bug, said as such).
 */
let upgradeLeftOut = 0
const withoutClientUpgrade = {
  name: "without-client-upgrade",
  setup(build) {
    build.onResolve({ filter: /^\.\/internal\/upgrade\.js$/ }, (args) => {
      if (args.kind !== "dynamic-import" || !/[\\/]@effect[\\/]platform-node[\\/]dist[\\/]NodeHttpClient\.js$/.test(args.importer)) return undefined
      upgradeLeftOut++
      return { path: "upgrade", namespace: "upgrade-left-out" }
    })
    build.onLoad({ filter: /.*/, namespace: "upgrade-left-out" }, () => ({
      contents: `throw new Error("dist/cli/run.cjs has no WebSocket upgrade for the HTTP client: its brains never ask for one")\n`,
      loader: "js"
    }))
  }
}

/**
 * The MCP client too (ClawsWithMcp imports it when mcp.json names a
 * server): a run whose home has an mcp.json starts from bin.cjs
 * (RunMain's `started`), so run.cjs neither evaluates nor wraps it. serve's
 * agent host imports it the same way (McpPool, AgentMcp), and run.cjs holds
 * the host's module for its settings (CliSettings): left out there too, or
 * esbuild wraps the modules they share and a run fails at its first pipe.
 */
const mcpImporters = ["claws/mcp/ClawsWithMcp.js", "hosts/serve/McpPool.js", "hosts/serve/AgentMcp.js"]
let mcpLeftOut = 0
const withoutMcp = {
  name: "without-mcp",
  setup(build) {
    build.onResolve({ filter: /(^|\/)McpClaws\.js$/ }, (args) => {
      if (args.kind !== "dynamic-import" || !mcpImporters.some((importer) => args.importer.endsWith(importer))) return undefined
      mcpLeftOut++
      return { path: "McpClaws", namespace: "left-out" }
    })
  }
}

// dist/cli/ also holds tsc's output of src/cli/ (the bundles' entries): only the bundles and their caches go.
for (const name of ["bin.cjs", "run.cjs", "spawn-helper.cjs", "undici.cjs", "code-cache"]) fs.rmSync(`dist/cli/${name}`, { recursive: true, force: true })
await esbuild.build({ ...common, entryPoints: { bin: "dist/cli/bin.js" }, plugins: [undiciApart, sharedBuiltins] })
await esbuild.build({ ...common, entryPoints: { run: "dist/cli/RunMain.js" }, plugins: [withoutDiscord, withoutMcp, withoutClientUpgrade, undiciApart, sharedBuiltins] })
await esbuild.build({ ...common, entryPoints: { undici: "node_modules/@effect/platform-node/dist/Undici.js" }, define: {}, plugins: [sharedBuiltins] })
// The spawn helper (src/runtime/process/SpawnHelper.ts) starts at an agent's first claw call: one file, run as it is.
await esbuild.build({ ...common, entryPoints: { "spawn-helper": "dist/runtime/process/SpawnHelperMain.js" }, define: {}, plugins: [sharedBuiltins] })
// Bridges.ts imports the Discord bridge some other way now: the run-only bundle would still carry it.
if (upgradeLeftOut !== 1) throw new Error(`build/bundle.mjs: expected one dynamic import of the HTTP client's upgrade to leave out of run.cjs, found ${upgradeLeftOut}`)
if (mcpLeftOut !== mcpImporters.length) {
  throw new Error(`build/bundle.mjs: expected ${mcpImporters.length} dynamic imports of McpClaws.js to leave out of run.cjs, found ${mcpLeftOut}`)
}
if (discordLeftOut !== 1) throw new Error(`build/bundle.mjs: expected one dynamic import of DiscordInteract.js to leave out of run.cjs, found ${discordLeftOut}`)

for (const name of ["bin", "run"]) {
  const file = `dist/cli/${name}.cjs`
  const code = Buffer.from(wrapBundle(fs.readFileSync(file, "latin1")), "latin1")
  const hash = createHash("sha256").update(code).digest("hex")
  fs.writeFileSync(file, Buffer.concat([Buffer.from(`// planckclaw-bundle-sha256:${hash}\n`), code]))
}

// The web console (console/, served by `serve` at /): one browser script, its page and style sheet, in dist/web-console/.
fs.rmSync("dist/web-console", { recursive: true, force: true })
await esbuild.build({
  entryPoints: { console: "console/src/main.ts" },
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  outdir: "dist/web-console",
  minify: true,
  legalComments: "none",
  logLevel: "warning"
})
for (const name of ["index.html", "console.css"]) fs.copyFileSync(`console/${name}`, `dist/web-console/${name}`)
