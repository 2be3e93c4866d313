/**
 * The packed package.json without `prepare`: in a checkout `npm ci` builds
 * through it, but an installer of the tarball (which ships dist/ built)
 * would be shown it as an install script to allow, and it could not run
 * there (no compiler, no sources' build config). npm reads the scripts again
 * after `prepack`, so `npm pack` then neither runs nor packs `prepare`;
 * `postpack` puts the file back byte for byte. Each write is a rename, so a
 * process reading package.json meanwhile (`planckclaw --version`) never
 * sees half a file.
 *
 * Usage: node build/pack-manifest.mjs strip|restore
 */
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.join(import.meta.dirname, "..")
const manifest = path.join(root, "package.json")
const kept = path.join(root, ".package.json.packing")

const replace = (file, text) => {
  const next = `${file}.${process.pid}.next`
  fs.writeFileSync(next, text)
  fs.renameSync(next, file)
}

const mode = process.argv[2]
if (mode === "strip") {
  const text = fs.readFileSync(manifest, "utf8")
  // A pack that died before postpack left the original here: keep that one.
  if (!fs.existsSync(kept)) fs.writeFileSync(kept, text)
  const packed = JSON.parse(text)
  delete packed.scripts.prepare
  replace(manifest, `${JSON.stringify(packed, null, 2)}\n`)
} else if (mode === "restore") {
  if (fs.existsSync(kept)) {
    replace(manifest, fs.readFileSync(kept, "utf8"))
    fs.rmSync(kept)
  }
} else {
  console.error("usage: node build/pack-manifest.mjs strip|restore")
  process.exit(2)
}
