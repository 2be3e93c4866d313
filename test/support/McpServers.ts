/**
 * The MCP servers the tests run, from node_modules (devDependencies; never
 * fetched at test time): the reference servers "everything" and
 * "filesystem", started with this Node.
 */
import { createRequire } from "node:module"
import * as Path from "node:path"

const require = createRequire(import.meta.url)

const entryOf = (pkg: string): string => Path.join(Path.dirname(require.resolve(`${pkg}/package.json`)), "dist", "index.js")

export const everythingEntry = entryOf("@modelcontextprotocol/server-everything")
export const filesystemEntry = entryOf("@modelcontextprotocol/server-filesystem")

/** An mcp.json entry that starts server-everything over stdio. */
export const everything = (env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [everythingEntry, "stdio"],
  env
})

/** An mcp.json entry that starts server-filesystem allowed only `dir`. */
export const filesystem = (dir: string) => ({ command: process.execPath, args: [filesystemEntry, dir] })
