/**
 * `mcp.json`: the MCP servers whose tools are offered beside the claws, in
 * the format other MCP clients (Claude Desktop, Cursor) use:
 * `{"mcpServers": {"NAME": {"command", "args", "env", "cwd"}}}` for a server
 * started over stdio, `{"url", "headers"}` for one reached over HTTP. Keys
 * other clients add (`type`, `disabled`...) are ignored, except `disabled:
 * true`, which leaves the server out, and `type: "sse"`, a transport not
 * spoken here, which refuses it. A bad entry is refused on its own,
 * with the file and the reason; a file that is no JSON object refuses them
 * all. Either way the claws still work.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type { ToolProblem } from "../../ports/Claws.js"
import { describeError, errnoCode } from "../../runtime/Errors.js"
import { printable } from "../../runtime/Printable.js"

/**
 * A server's name: the middle of its tools' names (`mcp__NAME__tool`), so
 * letters, digits, `-` and single `_`, never `__`, which separates them;
 * nor a last `_`, which would make `NAME___tool` read as NAME without it
 * and a tool `_tool` (McpNames.parseToolName splits at the first `__`).
 */
export const ServerName = Schema.String.check(
  Schema.isPattern(/^(?!.*__)(?!.*_$)[A-Za-z0-9_-]{1,32}$/, {
    message: "a server name is 1 to 32 letters, digits, - or _, without __ and not ending in _ (it goes into its tools' names, mcp__NAME__TOOL)"
  })
)

const Text = Schema.String.check(Schema.isNonEmpty({ message: "must not be empty" }))

const StdioEntry = Schema.Struct({
  command: Text,
  args: Schema.optional(Schema.Array(Schema.String)),
  env: Schema.optional(Schema.Record(Schema.String, Schema.String)),
  cwd: Schema.optional(Text),
  disabled: Schema.optional(Schema.Boolean)
})

const HttpEntry = Schema.Struct({
  url: Text.check(Schema.isPattern(/^https?:\/\//, { message: "must be an http:// or https:// URL" })),
  headers: Schema.optional(Schema.Record(Schema.String, Schema.String)),
  disabled: Schema.optional(Schema.Boolean)
})

export interface StdioServer {
  readonly _tag: "Stdio"
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** Exactly what the entry names; what the process gets is McpEnvironment's. */
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
}

export interface HttpServer {
  readonly _tag: "Http"
  readonly name: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
}

export type ServerEntry = StdioServer | HttpServer

export interface McpServers {
  readonly file: string
  readonly servers: ReadonlyArray<ServerEntry>
  readonly problems: ReadonlyArray<ToolProblem>
}

/** One line: the formatter's "at [path]" line joined to its message. */
const formatIssue = (issue: SchemaIssue.Issue): string => SchemaIssue.makeFormatterDefault()(issue).replace(/\s*\n\s*/g, " ")

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** An HTTP header's name: a token (RFC 9110). */
const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/**
 * What makes a header one fetch would refuse at every request (a "Transport
 * error" that does not say why), in words that never show its value, which
 * is often a token: a value holds tabs, visible ASCII and Latin-1 alone (a
 * token pasted with a curly quote or a zero-width space does not).
 */
const headerProblem = (name: string, value: string): string | undefined => {
  if (!headerName.test(name)) return `header ${JSON.stringify(name)}: not a header name (letters, digits and !#$%&'*+-.^_\`|~)`
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index)
    if (code === 0x09 || (code >= 0x20 && code <= 0x7e) || (code >= 0x80 && code <= 0xff)) continue
    const what = code === 0x0a || code === 0x0d
      ? "a line break"
      : code < 0x20 || code === 0x7f
      ? "a control character"
      : "outside Latin-1"
    return `header ${JSON.stringify(name)}: character ${index + 1} of its value is ${what}, which an HTTP header cannot carry`
  }
  return undefined
}

/** One entry, or why it is refused. `baseDir`: where a relative `cwd` is taken from. */
const decodeEntry = (name: string, entry: unknown, baseDir: string): Result.Result<ServerEntry | undefined, string> => {
  const named = Schema.decodeUnknownResult(ServerName)(name)
  if (Result.isFailure(named)) return Result.fail(formatIssue(named.failure.issue))
  if (!isObject(entry)) return Result.fail("an entry must be a JSON object with \"command\" (stdio) or \"url\" (HTTP)")
  if ("command" in entry && "url" in entry) return Result.fail("an entry has \"command\" (stdio) or \"url\" (HTTP), not both")
  // Its URL is the old transport's (a GET stream, often /sse): every start would fail with a bare HTTP status.
  if (entry.type === "sse") {
    return Result.fail(
      "\"type\": \"sse\" (the older HTTP+SSE transport) is not spoken here: give the server's Streamable HTTP endpoint " +
        "(often /mcp) as \"url\", without \"type\" or with \"type\": \"http\""
    )
  }
  if ("url" in entry) {
    const decoded = Schema.decodeUnknownResult(HttpEntry)(entry)
    if (Result.isFailure(decoded)) return Result.fail(formatIssue(decoded.failure.issue))
    if (decoded.success.disabled === true) return Result.succeed(undefined)
    const headers = decoded.success.headers ?? {}
    for (const [header, value] of Object.entries(headers)) {
      const problem = headerProblem(header, value)
      if (problem !== undefined) return Result.fail(problem)
    }
    return Result.succeed({ _tag: "Http", name, url: decoded.success.url, headers })
  }
  if (!("command" in entry)) return Result.fail("an entry needs \"command\" (a server started over stdio) or \"url\" (one reached over HTTP)")
  const decoded = Schema.decodeUnknownResult(StdioEntry)(entry)
  if (Result.isFailure(decoded)) return Result.fail(formatIssue(decoded.failure.issue))
  if (decoded.success.disabled === true) return Result.succeed(undefined)
  return Result.succeed({
    _tag: "Stdio",
    name,
    command: decoded.success.command,
    args: decoded.success.args ?? [],
    env: decoded.success.env ?? {},
    cwd: Path.resolve(baseDir, decoded.success.cwd ?? ".")
  })
}

/** The servers of `text` read from `file`; what is wrong with it as problems whose source is the file. */
export const parse = (file: string, text: string): McpServers => {
  const source = printable(file)
  const refuse = (reason: string): McpServers => ({ file, servers: [], problems: [{ source, reason: printable(reason) }] })
  const json = Result.try(() => JSON.parse(text) as unknown)
  if (Result.isFailure(json)) return refuse(`not JSON: ${describeError(json.failure)}`)
  if (!isObject(json.success)) return refuse("must be a JSON object with \"mcpServers\"")
  const entries = json.success.mcpServers
  if (entries === undefined) return refuse("has no \"mcpServers\" object (the format of Claude Desktop's and Cursor's mcp.json)")
  if (!isObject(entries)) return refuse("\"mcpServers\" must be an object of servers by name")
  const servers: Array<ServerEntry> = []
  const problems: Array<ToolProblem> = []
  for (const [name, entry] of Object.entries(entries)) {
    const decoded = decodeEntry(name, entry, Path.dirname(file))
    if (Result.isFailure(decoded)) {
      problems.push({ source: `${source}: server ${printable(JSON.stringify(name))}`, reason: printable(decoded.failure) })
    } else if (decoded.success !== undefined) servers.push(decoded.success)
  }
  return { file, servers, problems }
}

/**
 * `file` read and parsed; a missing file means no servers and no problem.
 * Most of serve's agents have none: an lstat finds that without the
 * exception a failed read throws (several times the lstat's cost).
 */
export const read = (file: string): McpServers => {
  const entry = Result.try(() => Fs.lstatSync(file, { throwIfNoEntry: false }))
  if (Result.isSuccess(entry) && entry.success === undefined) return { file, servers: [], problems: [] }
  const text = Result.try(() => Fs.readFileSync(file, "utf8"))
  if (Result.isSuccess(text)) return parse(file, text.success)
  if (errnoCode(text.failure) === "ENOENT") return { file, servers: [], problems: [] }
  return { file, servers: [], problems: [{ source: printable(file), reason: printable(`cannot read: ${describeError(text.failure)}`) }] }
}
