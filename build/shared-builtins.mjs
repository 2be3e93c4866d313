/**
 * An esbuild plugin for CommonJS bundles. Left to itself, esbuild turns each
 * `import * as fs from "node:fs"` into `__toESM(require("node:fs"))` in the
 * importing file: a fresh copy of the module's every property (getters) per
 * importer, about 70 copies and 4000 properties made at each start. This
 * sends every static import of a Node built-in to one virtual ES module per
 * built-in, so each is copied once per bundle and shared by its importers, as
 * ES modules share one namespace. `import`/`export ... from` statements go
 * there (ours and bundled ES packages'): a built-in has no `__esModule`,
 * so its namespace is the same in every importer's "node mode". So does a
 * dynamic `import()` of a built-in, which then loads it on first call with
 * `require`: left as `import()`, it would fail, as the bundle runs as a
 * `vm.Script` (for its code cache) with no dynamic import callback.
 * CommonJS packages' `require` calls stay esbuild's own.
 * A built-in imported by name only (esbuild's plain `require`, no copy) now
 * gets its one copy too: node:stream, node:module, node:string_decoder.
 */
import { isBuiltin } from "node:module"

const namespace = "builtin"

/** One module per built-in: its named exports, and its default (the CommonJS object, as in Node). */
export const sharedBuiltins = {
  name: "shared-builtins",
  setup(build) {
    build.onResolve({ filter: /^[a-z0-9_:/]+$/ }, (args) => {
      if (args.namespace === namespace) return { path: args.path, external: true }
      if ((args.kind !== "import-statement" && args.kind !== "dynamic-import") || !isBuiltin(args.path)) return undefined
      return { path: args.path.startsWith("node:") ? args.path : `node:${args.path}`, namespace }
    })
    build.onLoad({ filter: /.*/, namespace }, (args) => {
      const name = JSON.stringify(args.path)
      return { contents: `export * from ${name}\nexport default require(${name})\n`, loader: "js" }
    })
  }
}
