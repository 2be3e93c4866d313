/**
 * The MCP servers the tests run, from node_modules (devDependencies; never
 * fetched at test time): the reference servers "everything" and
 * "filesystem", and scripted ones on the official SDK's Server (a server
 * that misbehaves as real ones do), started with this Node.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
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

/** What a scripted server answers a call of one of its tools. */
export interface ScriptedAnswer {
  /** A line printed to stdout first, outside the protocol (a server's stray debug print). */
  readonly print?: string
  readonly text?: string
  /** Dies instead of answering: this written to stderr, then exit with `code`. */
  readonly exit?: { readonly stderr: string; readonly code: number }
  /** Never answers (the process stays up, reading on). */
  readonly hang?: boolean
  /** Answers a text of this many bytes ("x"s), instead of `text`. */
  readonly bytes?: number
  /** Answers the tool's own error result, with this text. */
  readonly error?: string
}

/** A server on the official SDK's low-level Server: `tools` listed as given (duplicates included), each call answered by `answers`. */
export interface ScriptedServer {
  readonly tools: ReadonlyArray<{ readonly name: string; readonly inputSchema: Record<string, unknown> }>
  readonly answers?: Readonly<Record<string, ScriptedAnswer>>
  /** A line printed to stdout before the server connects (a banner). */
  readonly banner?: string
}

const scriptedSource = `
const { Server } = require(${JSON.stringify(require.resolve("@modelcontextprotocol/sdk/server/index.js"))})
const { StdioServerTransport } = require(${JSON.stringify(require.resolve("@modelcontextprotocol/sdk/server/stdio.js"))})
const { CallToolRequestSchema, ListToolsRequestSchema } = require(${JSON.stringify(require.resolve("@modelcontextprotocol/sdk/types.js"))})
const spec = JSON.parse(process.argv[2])
const server = new Server({ name: "scripted", version: "1.0.0" }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: spec.tools }))
server.setRequestHandler(CallToolRequestSchema, (request) => {
  const answer = (spec.answers ?? {})[request.params.name] ?? {}
  if (answer.print !== undefined) process.stdout.write(answer.print + "\\n")
  if (answer.exit !== undefined) process.stderr.write(answer.exit.stderr + "\\n", () => process.exit(answer.exit.code))
  if (answer.exit !== undefined || answer.hang === true) return new Promise(() => {})
  if (answer.error !== undefined) return { content: [{ type: "text", text: answer.error }], isError: true }
  return { content: [{ type: "text", text: answer.bytes !== undefined ? "x".repeat(answer.bytes) : answer.text ?? "ok" }] }
})
if (spec.banner !== undefined) process.stdout.write(spec.banner + "\\n")
server.connect(new StdioServerTransport())
`

/** An mcp.json entry that starts a scripted server (its script written in `dir`). */
export const scripted = (dir: string, spec: ScriptedServer) => {
  const script = Path.join(dir, "scripted-mcp-server.cjs")
  Fs.writeFileSync(script, scriptedSource)
  return { command: process.execPath, args: [script, JSON.stringify(spec)] }
}
