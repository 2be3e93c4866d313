/**
 * The tools of the MCP servers in mcp.json as claws, each named
 * `mcp__SERVER__TOOL` (McpNames). A tool whose full name would not be a
 * valid tool name (more than 64 characters, or characters outside letters,
 * digits, `_` and `-`), or that the server lists again, is left out, with why. Loaded only when mcp.json
 * names a server (ClawsWithMcp imports it then): the MCP client is a good
 * part of a start's evaluation otherwise.
 */
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Layer from "effect/Layer"
import type * as HttpClient from "effect/http/HttpClient"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type * as Scope from "effect/Scope"
import type { ClawsService, ToolCatalog, ToolDefinition, ToolProblem, ToolResult } from "../../ports/Claws.js"
import { unknownTool } from "../../ports/Claws.js"
import { describeJsonType, isJsonObject } from "../../runtime/Json.js"
import { printable } from "../../runtime/Printable.js"
import type { McpServers, ServerEntry } from "./McpConfig.js"
import * as McpConnection from "./McpConnection.js"
import { parseToolName, toolName } from "./McpNames.js"

const validName = /^[A-Za-z0-9_-]{1,64}$/

export interface McpClaws extends ClawsService {
  /** Every configured server, by name (doctor and `tools` report them one by one). */
  readonly connections: ReadonlyMap<string, McpConnection.Connection>
}

/** A JSON Schema for a model: `$schema` left out (Anthropic's input_schema takes the schema itself). */
const inputSchemaOf = (schema: Readonly<Record<string, unknown>>): ToolDefinition["input_schema"] => {
  const { $schema: _ignored, ...rest } = schema
  return { ...rest, type: "object" }
}

/**
 * One server's tools as tool definitions (under `server`, the name its
 * mcp.json gives it), and the ones left out, each problem naming that file
 * and server as its configuration problems do (McpConfig).
 */
const definitions = (server: string, connection: McpConnection.Connection, file: string) =>
  Effect.map(connection.tools, ({ down, tools }) => {
    const source = `${printable(file)}: server ${printable(JSON.stringify(server))}`
    const problems: Array<ToolProblem> = down === undefined ? [] : [{ source, reason: `not running: ${down}` }]
    const defined: Array<ToolDefinition> = []
    for (const tool of tools) {
      const name = toolName(server, tool.name)
      if (!validName.test(name)) {
        problems.push({
          source,
          reason: printable(`tool "${tool.name}" left out: ${name} is not a valid tool name (at most 64 letters, digits, _ or -)`)
        })
        continue
      }
      // A model's API refuses a request whose tools share a name: every turn would fail.
      if (defined.some((earlier) => earlier.name === name)) {
        problems.push({ source, reason: printable(`tool "${tool.name}" is listed twice by the server; the first is offered`) })
        continue
      }
      defined.push({ name, description: tool.description ?? tool.title ?? "", input_schema: inputSchemaOf(tool.inputSchema) })
    }
    return { tools: defined, problems }
  })

/**
 * The tools of `connections` (by the name their mcp.json, `file`, gives
 * them), with `problems` (the file's) first. A connection may be shared with
 * other agents under another name (serve's pool): the names here are this one's.
 */
export const fromConnections = (
  connections: ReadonlyMap<string, McpConnection.Connection>,
  problems: ReadonlyArray<ToolProblem>,
  file: string
): McpClaws => {
  const list: Effect.Effect<ToolCatalog> = Effect.map(
    Effect.forEach([...connections], ([server, connection]) => definitions(server, connection, file), { concurrency: "unbounded" }),
    (each) => ({
      tools: each.flatMap((one) => one.tools),
      problems: [...problems, ...each.flatMap((one) => one.problems)]
    })
  )

  const call = (name: string, input: unknown): Effect.Effect<ToolResult> => {
    const parsed = parseToolName(name)
    const connection = parsed === undefined ? undefined : connections.get(parsed.server)
    if (parsed === undefined || connection === undefined) return Effect.succeed(unknownTool(name))
    if (!isJsonObject(input)) {
      return Effect.succeed({ content: `Tool ${name}: input must be a JSON object, got ${describeJsonType(input)}`, isError: true })
    }
    return connection.call(parsed.tool, input)
  }

  return { list, call, connections }
}

export const make = (
  config: McpServers,
  settings: McpConnection.ConnectionSettings
): Effect.Effect<McpClaws, never, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const connections = new Map<string, McpConnection.Connection>()
    for (const entry of config.servers) connections.set(entry.name, yield* McpConnection.make(entry, settings))
    return fromConnections(connections, config.problems, config.file)
  })

/** What MCP servers run on here: processes through effect's Node spawner, HTTP through fetch. */
export const platformLayer = Layer.mergeAll(
  NodeChildProcessSpawner.layer.pipe(Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer))),
  FetchHttpClient.layer
)

/** `make` on this platform, built in the caller's scope: the servers' processes live as long as it. */
export const makeOnPlatform = (config: McpServers, settings: McpConnection.ConnectionSettings) =>
  Effect.flatMap(Layer.build(platformLayer), (platform) => make(config, settings).pipe(Effect.provideContext(platform)))

/** One server's connection on this platform, in the caller's scope (serve's pool: McpPool). */
export const connectOnPlatform = (entry: ServerEntry, settings: McpConnection.ConnectionSettings) =>
  Effect.flatMap(Layer.build(platformLayer), (platform) => McpConnection.make(entry, settings).pipe(Effect.provideContext(platform)))
