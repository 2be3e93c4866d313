/**
 * The two CommonJS bundles: dist/cli/bin.cjs (every command) and
 * dist/cli/run.cjs (a run's own, smaller), from tsc's output in dist/.
 * Each Node built-in is wrapped once per bundle (build/shared-builtins.mjs).
 * Each bundle's first line is the SHA-256 of the rest, which keys its code
 * cache (bin/code-cache.cjs), so a start does not hash a megabyte.
 *
 * Usage: node build/bundle.mjs
 */
import * as esbuild from "esbuild"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { sharedBuiltins } from "./shared-builtins.mjs"

fs.rmSync("dist/cli", { recursive: true, force: true })
await esbuild.build({
  entryPoints: { bin: "dist/bin.js", run: "dist/RunMain.js" },
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  outdir: "dist/cli",
  outExtension: { ".js": ".cjs" },
  external: ["discord.js"],
  define: { "import.meta.url": "__bundle_url" },
  minifySyntax: true,
  minifyWhitespace: true,
  logLevel: "warning",
  plugins: [sharedBuiltins]
})

for (const name of ["bin", "run"]) {
  const file = `dist/cli/${name}.cjs`
  const code = fs.readFileSync(file)
  const hash = createHash("sha256").update(code).digest("hex")
  fs.writeFileSync(file, Buffer.concat([Buffer.from(`// planckclaw-bundle-sha256:${hash}\n`), code]))
}
