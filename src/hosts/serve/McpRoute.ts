/**
 * `serve` over MCP: POST /v1/mcp, Streamable HTTP (effect/ai's McpServer),
 * behind PLANCKCLAW_HTTP_TOKEN as every route is (HttpApi checks the
 * bearer before this). Its tools: the claws every agent of the host has
 * (their #TOOLS: schemas, when the host's Claws is in context), and
 * ask_agent, which sends a message to the agent its `agent` argument names
 * (started on demand, as POST /v1/agents/{id}/messages does) and returns
 * the reply. Loaded only when a request comes to /v1/mcp.
 */
import * as McpProtocol from "effect/ai/McpProtocol"
import * as McpSchema from "effect/ai/McpSchema"
import * as McpServer from "effect/ai/McpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { packageVersion } from "../../config/PackageRoot.js"
import { Claws } from "../../ports/Claws.js"
import { addClawTools, answerResult, askArguments, askToolName, defaultChannel, text } from "../mcp/McpHost.js"
import { AgentHost, type AgentHostService } from "./AgentHost.js"

export const mcpPath = "/v1/mcp"

/** Whether a request's URL is the MCP endpoint's. */
export const isMcpUrl = (url: string): boolean => url === mcpPath || url.startsWith(`${mcpPath}?`)

const askTool = new McpSchema.Tool({
  name: askToolName,
  description: "Send a message to one of this host's PlanckClaw agents (its persona, memory and tools) and return " +
    "its reply. The exchange is remembered in that agent's history.",
  inputSchema: {
    type: "object",
    properties: {
      agent: { type: "string", description: "the agent's id, as in /v1/agents/{id} (letters, digits, - and _)" },
      message: { type: "string", description: "what to say to the agent" },
      channel: { type: "string", description: `the conversation's channel in the agent's memory (default "${defaultChannel}")` }
    },
    required: ["agent", "message"]
  }
})

/**
 * One ask: ask_agent's arguments as `planckclaw mcp` reads them, the message
 * checked by the host; isError by the turn's `notAnswered`, which the reply
 * carries, as `planckclaw mcp` decides it (answerResult). Sent without an
 * Idempotency-Key, an ask is never cancelled.
 */
const ask = (host: AgentHostService) => (payload: unknown): Effect.Effect<McpSchema.CallToolResult> => {
  const agent = (payload as { readonly agent?: unknown } | undefined)?.agent
  if (typeof agent !== "string") {
    return Effect.succeed(text({ content: `${askToolName}: "agent" and a non-empty "message" are required strings`, isError: true }))
  }
  const input = askArguments(payload)
  if (Result.isFailure(input)) return Effect.succeed(input.failure)
  return host.send(agent, input.success).pipe(
    Effect.map(answerResult),
    Effect.catch((error) => Effect.succeed(text({ content: `${askToolName}: ${error.message}`, isError: true })))
  )
}

const registrations = Layer.effectDiscard(Effect.gen(function*() {
  const server = yield* McpServer.McpServer
  const host = yield* AgentHost
  const claws = yield* Effect.serviceOption(Claws)
  if (Option.isSome(claws)) {
    const catalog = yield* Effect.orElseSucceed(claws.value.list, () => ({ tools: [], problems: [] }))
    yield* addClawTools(claws.value, catalog.tools)
  }
  yield* server.addTool({ tool: askTool, annotations: Context.empty(), handle: ask(host) })
}))

/** The endpoint's handler, built in the caller's scope (its sessions end with it); a refused option is a bug of ours. */
export const make = HttpRouter.toHttpEffect(
  McpServer.layerHttp({
    name: "planckclaw",
    version: packageVersion(),
    path: mcpPath,
    protocols: [McpProtocol.v2025_11_25, McpProtocol.v2025_06_18, McpProtocol.v2025_03_26],
    allowSessionTermination: true,
    registrations
  }).pipe(Layer.provide(HttpServer.layerServices))
).pipe(Effect.orDie)
