/**
 * Where the installed package lives (the directory of its package.json),
 * found from wherever this module was built to (dist/ or dist/cli/), so a
 * global install or `npm link` finds its templates and version.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const packageRoot = (from: string = import.meta.url): string | undefined => {
  for (let dir = path.dirname(fileURLToPath(from)); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir
    if (path.dirname(dir) === dir) return undefined
  }
}

/** The version in package.json, or "unknown". */
export const packageVersion = (): string => {
  const root = packageRoot()
  if (root === undefined) return "unknown"
  const parsed = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { readonly version?: unknown }
  return typeof parsed.version === "string" ? parsed.version : "unknown"
}
