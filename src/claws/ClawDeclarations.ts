/**
 * What one claw declares: its `#TOOLS:` lines, each a JSON tool definition
 * or an array of them. A bad line or item never hides the good ones.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type ToolDefinition, ToolDefinition as ToolDefinitionSchema, type ToolProblem } from "../Claws.js"
import { describeError } from "../Errors.js"

const toolsPrefix = "#TOOLS:"

export interface Declaration {
  readonly tool: ToolDefinition
  readonly source: string
}

export interface ParsedFile {
  readonly declarations: ReadonlyArray<Declaration>
  readonly problems: ReadonlyArray<ToolProblem>
}

const decodeTool = Schema.decodeUnknownEither(ToolDefinitionSchema)

export const parseClawFile = (displayPath: string, text: string): ParsedFile => {
  const declarations: Array<Declaration> = []
  const problems: Array<ToolProblem> = []
  if (!text.includes(toolsPrefix)) return { declarations, problems }
  text.split("\n").forEach((line, index) => {
    if (!line.startsWith(toolsPrefix)) return
    const source = `${displayPath}:${index + 1}`
    const parsed = Either.try(() => JSON.parse(line.slice(toolsPrefix.length)) as unknown)
    if (Either.isLeft(parsed)) {
      problems.push({ source, reason: `invalid JSON after #TOOLS: (${describeError(parsed.left)})` })
      return
    }
    const items = Array.isArray(parsed.right) ? parsed.right : [parsed.right]
    items.forEach((item, position) => {
      const decoded = decodeTool(item)
      if (Either.isRight(decoded)) {
        declarations.push({ tool: decoded.right, source })
      } else {
        const where = Array.isArray(parsed.right) ? `item ${position + 1}: ` : ""
        problems.push({
          source,
          reason: `${where}invalid tool definition: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`
        })
      }
    })
  })
  return { declarations, problems }
}
