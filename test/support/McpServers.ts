/**
 * The MCP servers the tests run, from node_modules (devDependencies; never
 * fetched at test time): the reference servers "everything" and
 * "filesystem", started with this Node.
 */
import * as Child from "node:child_process"
import { createRequire } from "node:module"
import * as Net from "node:net"
import * as Path from "node:path"
import { Effect } from "effect"

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

/** A port free on loopback a moment ago. */
export const freePort: Effect.Effect<number> = Effect.callback<number>((resume) => {
  const server = Net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** server-everything over Streamable HTTP on `port` (`/mcp`), once it listens; killed with the scope. */
export const httpEverything = (port: number) =>
  Effect.acquireRelease(
    Effect.callback<Child.ChildProcess>((resume) => {
      const child = Child.spawn(process.execPath, [everythingEntry, "streamableHttp"], {
        env: { PATH: process.env.PATH ?? "", PORT: String(port) },
        stdio: ["ignore", "ignore", "pipe"]
      })
      let said = ""
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
        said += chunk
        if (said.includes("listening on port")) resume(Effect.succeed(child))
      })
    }),
    (child) => Effect.sync(() => child.kill("SIGKILL"))
  )
