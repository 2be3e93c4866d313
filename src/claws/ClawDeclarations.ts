/**
 * What one claw declares: its `#TOOLS:` lines, each a JSON tool definition
 * or an array of them. A bad line or item never hides the good ones.
 */
import * as Result from "effect/Result"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Schema from "effect/Schema"
import { type ToolCatalog, type ToolDefinition, ToolDefinition as ToolDefinitionSchema, type ToolProblem } from "../ports/Claws.js"
import { describeError } from "../runtime/Errors.js"
import { madeOnFirstCall } from "../runtime/FirstCall.js"
import { printable } from "../runtime/Printable.js"
import { reservedReason, toolPrefix } from "./mcp/McpNames.js"

const toolsPrefix = "#TOOLS:"

/**
 * The most one `#TOOLS:` line may take, in UTF-8 bytes. Generous for any
 * real tool, and it keeps one runaway declaration from pushing the whole
 * catalogue past what the claw pipes frame (16 MiB), which would leave the
 * agent with no tools at all.
 */
export const maxDeclarationBytes = 1024 * 1024

export interface Declaration {
  readonly tool: ToolDefinition
  readonly source: string
}

export interface ParsedFile {
  readonly declarations: ReadonlyArray<Declaration>
  readonly problems: ReadonlyArray<ToolProblem>
}

export interface Catalog extends ToolCatalog {
  /** Tool name to the absolute path of the claw that declares it. */
  readonly files: ReadonlyMap<string, string>
}

const decodeTool = madeOnFirstCall(() => Schema.decodeUnknownResult(ToolDefinitionSchema))
const formatIssues = madeOnFirstCall(() => SchemaIssue.makeFormatterStandardSchemaV1())

/** Where in a declaration a problem is: `input_schema.required[1]`, a key that is no identifier quoted. */
const pathOf = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string =>
  path.reduce<string>((where, segment) => {
    const key = typeof segment === "object" ? segment.key : segment
    if (typeof key === "number") return `${where}[${key}]`
    // Quoted, not JSON-escaped: the reason is made printable once, whole.
    const name = typeof key === "string" && /^[A-Za-z_$][\w$]*$/.test(key) ? key : `"${String(key)}"`
    return where === "" ? name : `${where}.${name}`
  }, "")

/**
 * What a schema refused first in a tool's declaration, on one line, and
 * where: `Expected array (at inputSchema.required)`; undefined when the
 * issue says nothing. Discovery's and MCP's Tool's (McpHost), so both name a
 * place alike. Not made printable: the caller makes its whole line so, once.
 */
export const firstProblem = (issue: SchemaIssue.Issue): string | undefined => {
  const first = formatIssues(issue).issues[0]
  if (first === undefined) return undefined
  return first.path === undefined || first.path.length === 0 ? first.message : `${first.message} (at ${pathOf(first.path)})`
}

/** The first problem of a declaration, on one line: what is wrong, and where. */
const formatIssue = (issue: SchemaIssue.Issue): string => printable(firstProblem(issue) ?? "it could not be read")

export const parseClawFile = (displayPath: string, text: string): ParsedFile => {
  const declarations: Array<Declaration> = []
  const problems: Array<ToolProblem> = []
  if (!text.includes(toolsPrefix)) return { declarations, problems }
  // What an editor elsewhere may save; the shell then misreads the first line (the mark)
  // or every line (CRLF): said, not guessed around.
  if (text.startsWith("\ufeff")) {
    problems.push({ source: `${displayPath}:1`, reason: "the file starts with a byte order mark (U+FEFF): save it as UTF-8 without one" })
  }
  if (text.includes("\r\n")) {
    problems.push({
      source: displayPath,
      reason: "the file has Windows line endings (CRLF), which keep it from running: convert them (dos2unix, or sed -i 's/\\r$//')"
    })
  }
  text.split("\n").forEach((raw, index) => {
    const line = index === 0 ? raw.replace(/^\ufeff/, "") : raw
    if (!line.startsWith(toolsPrefix)) return
    const source = `${displayPath}:${index + 1}`
    const bytes = Buffer.byteLength(line)
    if (bytes > maxDeclarationBytes) {
      problems.push({
        source,
        reason: `the #TOOLS: line takes ${bytes} bytes, more than a declaration may (${maxDeclarationBytes}); skipped`
      })
      return
    }
    const parsed = Result.try(() => JSON.parse(line.slice(toolsPrefix.length)) as unknown)
    if (Result.isFailure(parsed)) {
      // JSON.parse quotes the text it failed on, control characters included.
      problems.push({ source, reason: `invalid JSON after #TOOLS: (${printable(describeError(parsed.failure))})` })
      return
    }
    const items = Array.isArray(parsed.success) ? parsed.success : [parsed.success]
    items.forEach((item, position) => {
      const decoded = decodeTool(item)
      if (Result.isSuccess(decoded)) {
        declarations.push({ tool: decoded.success, source })
      } else {
        const where = Array.isArray(parsed.success) ? `item ${position + 1}: ` : ""
        problems.push({
          source,
          reason: `${where}invalid tool definition: ${formatIssue(decoded.failure.issue)}`
        })
      }
    })
  })
  return { declarations, problems }
}

/**
 * The claws' declarations in file order; when two declare the same tool, the
 * first wins. A name starting `mcp__` is the MCP servers' (McpNames), left out.
 */
export const merge = (files: Iterable<ParsedFile & { readonly path: string }>): Catalog => {
  const tools: Array<ToolDefinition> = []
  const problems: Array<ToolProblem> = []
  const paths = new Map<string, string>()
  const firstSource = new Map<string, string>()
  for (const file of files) {
    problems.push(...file.problems)
    for (const declaration of file.declarations) {
      // Reserved with an mcp.json or without one: adding one later must not take a claw's tool away.
      if (declaration.tool.name.startsWith(toolPrefix)) {
        problems.push({ source: declaration.source, reason: reservedReason(declaration.tool.name) })
        continue
      }
      const earlier = firstSource.get(declaration.tool.name)
      if (earlier !== undefined) {
        problems.push({
          source: declaration.source,
          reason: `tool "${declaration.tool.name}" is already declared at ${earlier}; the first declaration wins`
        })
        continue
      }
      firstSource.set(declaration.tool.name, declaration.source)
      paths.set(declaration.tool.name, file.path)
      tools.push(declaration.tool)
    }
  }
  return { tools, problems, files: paths }
}
