/**
 * After esbuild: each `import * as fs from "node:fs"` in the sources becomes
 * `__toESM(require("node:fs"))` in a CommonJS bundle, a fresh copy of the
 * module's every property (getters) per importing file: about 70 copies
 * and 4000 properties made at each start of a run. A built-in's exports are
 * complete once required, so one namespace per built-in, shared by every
 * importer (as ES modules share one), is the same thing made once.
 * Bundled CommonJS packages keep esbuild's own per-site copies (a package
 * in a require cycle may not have all its exports yet at the first one).
 *
 * Usage: node build/builtin-namespaces.mjs BUNDLE...  Fails, naming the
 * bundle, when esbuild's helper is not there to wrap.
 */
import * as fs from "node:fs"

const helper = "var __toESM="
// Keyed by the name and esbuild's "node mode" flag, which decides what `default` is.
const shared = "var __builtinNamespaces=new Map,__builtinNamespace=(key,mod,nodeMode)=>{let made=__builtinNamespaces.get(key);" +
  "if(made===void 0)__builtinNamespaces.set(key,made=__toESM(mod,nodeMode));return made};"
const site = /__toESM\(require\("(node:[a-z_/]+)"\)(,1)?\)/g

for (const bundle of process.argv.slice(2)) {
  const source = fs.readFileSync(bundle, "utf8")
  const at = source.indexOf(helper)
  if (at < 0 || source.indexOf(helper, at + 1) >= 0) {
    console.error(`builtin-namespaces: ${bundle} does not define esbuild's __toESM exactly once; left as it is`)
    process.exit(1)
  }
  const rewritten = source.slice(0, at) + shared + source.slice(at)
    .replace(site, (_, name, nodeMode) =>
      `__builtinNamespace(${JSON.stringify(`${name}${nodeMode ?? ""}`)},require(${JSON.stringify(name)})${nodeMode ?? ""})`)
  fs.writeFileSync(bundle, rewritten)
}
