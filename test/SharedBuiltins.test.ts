/**
 * build/shared-builtins.mjs: every static import of a Node built-in goes to
 * one namespace per built-in in a CommonJS bundle, and namespace, named and
 * default imports (with or without `node:`) still see what Node gives an ES
 * module. A small bundle is built and run beside its unbundled sources.
 */
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as esbuild from "esbuild"
import { afterEach, describe, expect, it } from "vitest"

const pluginPath = path.join(import.meta.dirname, "..", "build", "shared-builtins.mjs")

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

const sources: Record<string, string> = {
  "package.json": `{"type":"module"}`,
  "main.js": [
    `import * as fs from "node:fs"`,
    `import { createHash } from "node:crypto"`,
    `import path from "node:path"`,
    `import { other } from "./other.js"`,
    `console.log(JSON.stringify([typeof fs.readFileSync, fs.default.readFileSync === fs.readFileSync,`,
    `  createHash("sha1").update("x").digest("hex"), path.join("a", "b"), other()]))`
  ].join("\n"),
  "other.js": [
    `import * as fs from "fs"`,
    `import fsDefault from "node:fs"`,
    `import * as crypto from "node:crypto"`,
    `import { join } from "node:path"`,
    `export const other = () => [fs.statSync === fsDefault.statSync, typeof crypto.randomUUID, join("c", "d")]`
  ].join("\n")
}

describe("build/shared-builtins.mjs", () => {
  it("wraps each built-in once per bundle; namespace, named and default imports work as unbundled", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "planckclaw-shared-builtins-"))
    dirs.push(dir)
    for (const [name, text] of Object.entries(sources)) fs.writeFileSync(path.join(dir, name), text)
    const { sharedBuiltins } = (await import(pluginPath)) as { readonly sharedBuiltins: esbuild.Plugin }
    const outfile = path.join(dir, "bundle.cjs")
    await esbuild.build({
      entryPoints: [path.join(dir, "main.js")],
      bundle: true,
      format: "cjs",
      platform: "node",
      target: "node20",
      outfile,
      logLevel: "silent",
      plugins: [sharedBuiltins]
    })
    const bundle = fs.readFileSync(outfile, "utf8")
    expect(bundle).not.toMatch(/__toESM\(require\(/)
    for (const name of ["node:fs", "node:crypto", "node:path"]) {
      expect(bundle.match(new RegExp(`__reExport\\(\\w+,\\s*require\\("${name}"\\)`, "g"))).toHaveLength(1)
    }
    const run = (file: string) => child.execFileSync(process.execPath, [file], { encoding: "utf8" })
    const bundled = run(outfile)
    expect(JSON.parse(bundled)).toEqual([
      "function",
      true,
      "11f6ad8ec52a2984abaafd7c3b516503785c2072",
      path.join("a", "b"),
      [true, "function", path.join("c", "d")]
    ])
    expect(bundled).toBe(run(path.join(dir, "main.js")))
  })
})
