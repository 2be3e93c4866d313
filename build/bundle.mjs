/**
 * The command line's CommonJS bundle, dist/cli/bin.cjs (every command), and
 * the spawn helper's, from tsc's output in dist/. Each Node built-in is
 * wrapped once per bundle (build/shared-builtins.mjs). The command line's first line is
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

// dist/cli/ also holds tsc's output of src/cli/ (the bundles' entries): only the bundles and their caches go.
for (const name of ["bin.cjs", "run.cjs", "spawn-helper.cjs", "code-cache"]) fs.rmSync(`dist/cli/${name}`, { recursive: true, force: true })
await esbuild.build({ ...common, entryPoints: { bin: "dist/cli/bin.js" }, plugins: [sharedBuiltins] })
// The spawn helper (src/runtime/process/SpawnHelper.ts) starts at an agent's first claw call: one file, run as it is.
await esbuild.build({ ...common, entryPoints: { "spawn-helper": "dist/runtime/process/SpawnHelperMain.js" }, define: {}, plugins: [sharedBuiltins] })

for (const name of ["bin"]) {
  const file = `dist/cli/${name}.cjs`
  const code = Buffer.from(wrapBundle(fs.readFileSync(file, "latin1")), "latin1")
  const hash = createHash("sha256").update(code).digest("hex")
  fs.writeFileSync(file, Buffer.concat([Buffer.from(`// planckclaw-bundle-sha256:${hash}\n`), code]))
}
