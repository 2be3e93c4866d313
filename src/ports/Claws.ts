/**
 * The Claws port: which tools exist, and running one.
 * Implementations: shell scripts in a directory, an external process over
 * FIFOs, an in-memory table for tests and embedding.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

export const ToolName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_-]{1,64}$/, { message: "tool name must match ^[A-Za-z0-9_-]{1,64}$" })
)

const DefaultInputSchema = { type: "object", properties: {} } as const

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/**
 * A tool's input schema: a JSON Schema whose root is an object, its
 * `properties` schemas (objects or booleans), its `required` names. The
 * shape MCP's Tool takes (effect/ai's McpSchema.ToolJson, matched here so
 * that every start does not load effect/ai), and what the model APIs need:
 * a declaration that is not refused here would stop `planckclaw mcp`, and
 * every turn would be refused.
 */
const InputSchema = Schema.StructWithRest(
  Schema.Struct({
    type: Schema.Literal("object").annotate({ message: "input_schema's \"type\" must be \"object\"" })
      .annotateKey({ messageMissingKey: "input_schema needs \"type\": \"object\"" }),
    properties: Schema.optionalKey(
      Schema.Record(
        Schema.String,
        Schema.Union([JsonObject, Schema.Boolean]).annotate({ message: "a property's schema must be a JSON object or a boolean" })
      ).annotate({ message: "\"properties\" must be a JSON object of property schemas" })
    ),
    required: Schema.optionalKey(
      Schema.Array(Schema.String.annotate({ message: "\"required\" may hold only property names (strings)" }))
        .annotate({ message: "\"required\" must be an array of property names" })
    )
  }),
  [JsonObject]
).annotate({ message: "input_schema must be a JSON object (a JSON Schema whose \"type\" is \"object\")" })

/**
 * A tool declaration as a claw writes it. The original shell claws sometimes
 * omit `input_schema` or `description`; both get safe defaults.
 */
export const ToolDefinition = Schema.Struct({
  name: ToolName,
  description: Schema.String.pipe(Schema.withDecodingDefaultType(Effect.succeed(""))),
  input_schema: InputSchema.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(DefaultInputSchema)))
})
export type ToolDefinition = typeof ToolDefinition.Type

/** A declaration that was rejected, with where it came from and why. */
export interface ToolProblem {
  /** e.g. `claws/dice.sh:3` */
  readonly source: string
  readonly reason: string
}

export interface ToolCatalog {
  readonly tools: ReadonlyArray<ToolDefinition>
  readonly problems: ReadonlyArray<ToolProblem>
}

/** What a tool produced; `isError` becomes `is_error` in the tool_result block. */
export interface ToolResult {
  readonly content: string
  readonly isError: boolean
}

/** The claw transport itself failed (not the tool: a failing tool is a ToolResult). */
export class ClawsError extends Data.TaggedError("ClawsError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface ClawsService {
  readonly list: Effect.Effect<ToolCatalog, ClawsError>
  /**
   * `list` for a discovery request read from claw_in by a server that reads
   * each request as it arrives (the agent sends one at a time): the request
   * was written after the message it serves was seen, so every change made
   * before that message is already reported by the poll that delivered the
   * request, and an implementation may wait less for it (ScriptClaws: to
   * the end of that poll, one loop turn instead of two). Absent: `list`.
   */
  readonly listOnRequest?: Effect.Effect<ToolCatalog, ClawsError>
  readonly call: (name: string, input: unknown) => Effect.Effect<ToolResult, ClawsError>
}

export class Claws extends Context.Service<Claws, ClawsService>()("planckclaw/Claws") {}

/**
 * The claws a host offers onward to MCP clients (serve's POST /v1/mcp, as
 * `planckclaw mcp` offers them): the scripts alone, beside Claws where Claws
 * also holds the MCP servers' tools, so that listing them starts no server.
 * Absent: Claws is offered.
 */
export class OfferedClaws extends Context.Service<OfferedClaws, ClawsService>()("planckclaw/OfferedClaws") {}

export const unknownTool = (name: string): ToolResult => ({ content: `Unknown tool: ${name}`, isError: true })
