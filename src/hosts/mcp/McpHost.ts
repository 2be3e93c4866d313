/**
 * PlanckClaw as an MCP server (effect/ai's McpServer): the home's claws as
 * MCP tools, each with its `#TOOLS:` declaration as its input schema, run
 * with the claws' limits; and `ask_agent`, which sends a message to the
 * agent (its soul, memory and claws, MCP servers included) and returns its
 * reply, remembered as a turn typed at the terminal would be.
 *
 * The tools are the claws found when the server starts. The agent is
 * built on the first ask, holding the memory directory as `run` does: while
 * a run holds it, ask_agent answers an error saying so (and is tried again
 * at the next ask); the claws' tools work regardless. Asks are answered one
 * at a time, in order.
 */
import * as McpSchema from "effect/ai/McpSchema"
import * as McpServer from "effect/ai/McpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { Agent } from "../../agent/Agent.js"
import { firstProblem } from "../../claws/ClawDeclarations.js"
import type { NotAnswered } from "../../agent/Turn.js"
import { Inbox } from "../../memory/Inbox.js"
import type { ClawsService, ToolDefinition, ToolResult } from "../../ports/Claws.js"
import { describeError } from "../../runtime/Errors.js"
import { printable } from "../../runtime/Printable.js"
import * as HostMessage from "../serve/HostMessage.js"

export const askToolName = "ask_agent"

/** The channel an ask's exchange is remembered under, unless it names one. */
export const defaultChannel = "mcp"

export const text = (result: ToolResult): McpSchema.CallToolResult =>
  new McpSchema.CallToolResult({ isError: result.isError, content: [{ type: "text", text: result.content }] })

/**
 * ask_agent's result for the agent's outcome (`planckclaw mcp`'s) or a
 * reply of serve's host, which carries the outcome's `notAnswered`: an error
 * when the agent said it did not answer (it could not, or refused the
 * message), never for what a model's reply says.
 */
export const answerResult = (answer: { readonly reply: string; readonly notAnswered?: NotAnswered | undefined }): McpSchema.CallToolResult =>
  text({ content: answer.reply, isError: answer.notAnswered !== undefined })

const checkChannel = Schema.decodeUnknownResult(HostMessage.Channel)

/**
 * ask_agent's `message` and `channel` (the default when it names none, else
 * checked by HostMessage's rule, as serve checks a message's), or what is
 * wrong with them, as the error result to answer.
 */
export const askArguments = (
  payload: unknown
): Result.Result<{ readonly text: string; readonly channel: string }, McpSchema.CallToolResult> => {
  const input = (payload ?? {}) as { readonly message?: unknown; readonly channel?: unknown }
  if (typeof input.message !== "string" || input.message.trim() === "") {
    return Result.fail(text({ content: `${askToolName}: "message" must be a non-empty string`, isError: true }))
  }
  if (input.channel === undefined) return Result.succeed({ text: input.message, channel: defaultChannel })
  return Result.mapBoth(checkChannel(input.channel), {
    onFailure: ({ issue }) => text({ content: `${askToolName}: ${HostMessage.firstIssue(issue).message}`, isError: true }),
    onSuccess: (channel) => ({ text: input.message as string, channel })
  })
}

const decodeTool = Schema.decodeUnknownResult(McpSchema.Tool)

/** What MCP's Tool refused first, and where, as discovery says it of a declaration. */
const toolProblem = (issue: SchemaIssue.Issue): string => firstProblem(issue) ?? "MCP's Tool refused it"

/** What a call still running when `planckclaw mcp`'s client closed its input answers (written, though nobody reads it). */
const clientGoneResult = text({ content: "the MCP client closed its input, so the call was stopped", isError: true })

/**
 * `handle`, stopped once `clientGone` completes: its work interrupted (a
 * claw's session killed, an ask's turn cut), as nobody is left to read the
 * answer; never, for serve's MCP route.
 */
const untilGone = (clientGone: Effect.Effect<void>) =>
(handle: (payload: unknown) => Effect.Effect<McpSchema.CallToolResult>) =>
(payload: unknown): Effect.Effect<McpSchema.CallToolResult> =>
  Effect.raceFirst(handle(payload), Effect.as(clientGone, clientGoneResult))

/** A claw's tool as an MCP tool; what MCP's Tool refuses of its declaration, if discovery let it through. */
export const clawTool = (claws: ClawsService, definition: ToolDefinition, clientGone: Effect.Effect<void> = Effect.never) =>
  Result.mapBoth(decodeTool({ name: definition.name, description: definition.description, inputSchema: definition.input_schema }), {
    onFailure: ({ issue }) => toolProblem(issue),
    onSuccess: (tool) => ({
      tool,
      annotations: Context.empty(),
      handle: untilGone(clientGone)((payload) =>
        Effect.map(claws.call(definition.name, payload ?? {}), text).pipe(
          Effect.catch((error) => Effect.succeed(text({ content: `Tool ${definition.name} failed: ${error.message}`, isError: true })))
        )
      )
    })
  })

/**
 * Offers each tool of `tools` on the MCP server, but one named as the ask
 * tool, and one MCP's Tool refuses: each of those is skipped with a warning,
 * so one declaration never stops the server. A call is stopped once
 * `clientGone` completes.
 */
export const addClawTools = (
  claws: ClawsService,
  tools: ReadonlyArray<ToolDefinition>,
  clientGone: Effect.Effect<void> = Effect.never
): Effect.Effect<void, never, McpServer.McpServer> =>
  Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    for (const definition of tools) {
      if (definition.name === askToolName) {
        yield* Effect.logWarning(`claw tool ${askToolName} is not offered over MCP: the name is the agent's ask tool`)
        continue
      }
      const registration = clawTool(claws, definition, clientGone)
      if (Result.isFailure(registration)) {
        yield* Effect.logWarning(printable(`claw tool ${definition.name} is not offered over MCP: ${registration.failure}`))
        continue
      }
      yield* server.addTool(registration.success)
    }
  })

const askTool = new McpSchema.Tool({
  name: askToolName,
  description: "Send a message to the PlanckClaw agent (its persona, memory and tools) and return its reply. " +
    "The exchange is remembered as a conversation turn.",
  inputSchema: {
    type: "object",
    properties: {
      message: { type: "string", description: "what to say to the agent" },
      channel: { type: "string", description: `the conversation's channel in the agent's memory (default "${defaultChannel}")` }
    },
    required: ["message"]
  }
})

/** An agent, built on first use in `scope`; a failed build is said and tried again next time. */
export const lazyAgent = <E, R>(
  layer: Layer.Layer<Agent | Inbox, E, R>,
  scope: Scope.Scope
): Effect.Effect<Effect.Effect<Context.Context<Agent | Inbox>, string>, never, R> =>
  Effect.gen(function*() {
    const services = yield* Effect.context<R>()
    const lock = yield* Semaphore.make(1)
    let built: Context.Context<Agent | Inbox> | undefined
    return lock.withPermits(1)(Effect.suspend(() => {
      if (built !== undefined) return Effect.succeed(built)
      return Effect.gen(function*() {
        const attempt = yield* Scope.fork(scope, "sequential")
        const exit = yield* Effect.exit(Layer.buildWithScope(layer, attempt).pipe(Effect.provideContext(services)))
        if (Exit.isSuccess(exit)) return built = exit.value
        yield* Scope.close(attempt, exit)
        const error = Option.getOrUndefined(Exit.findErrorOption(exit))
        return yield* Effect.fail(error === undefined ? "the agent could not start" : describeError(error))
      })
    }))
  })

/** One ask: the message checked as serve checks one, accepted, answered and remembered; the reply as the tool's result. */
const ask = (
  agentContext: Effect.Effect<Context.Context<Agent | Inbox>, string>,
  lock: Semaphore.Semaphore,
  checkParts: ReturnType<typeof HostMessage.partsChecker>
) =>
(payload: unknown): Effect.Effect<McpSchema.CallToolResult> => {
  const input = askArguments(payload)
  if (Result.isFailure(input)) return Effect.succeed(input.failure)
  const checked = checkParts(input.success)
  if (Result.isFailure(checked)) return Effect.succeed(text({ content: `${askToolName}: ${checked.failure.message}`, isError: true }))
  const message = input.success
  return lock.withPermits(1)(Effect.gen(function*() {
    const context = yield* agentContext
    const agent = Context.get(context, Agent)
    const inbox = Context.get(context, Inbox)
    const pending = yield* inbox.accept(message)
    const outcome = yield* agent.respond(pending)
    yield* agent.delivered(pending, outcome)
    return Option.match(outcome, {
      onNone: () => text({ content: "(no reply: the message was blank)", isError: true }),
      onSome: answerResult
    })
  })).pipe(
    Effect.catch((reason) => Effect.succeed(text({ content: `${askToolName}: the agent cannot answer: ${reason}`, isError: true })))
  )
}

/**
 * The registrations of the MCP server: every claw of `claws`' catalogue
 * now, and ask_agent on `agentContext`, refusing a message over
 * `maxMessageBytes` (PLANCKCLAW_MAX_MESSAGE_BYTES) as the agent would. A
 * call still running when `clientGone` completes (the client closed its
 * input) is stopped.
 */
export const registrations = (
  claws: ClawsService,
  agentContext: Effect.Effect<Context.Context<Agent | Inbox>, string>,
  maxMessageBytes: number,
  clientGone: Effect.Effect<void> = Effect.never
): Layer.Layer<never, never, McpServer.McpServer> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    const catalog = yield* Effect.orElseSucceed(claws.list, () => ({ tools: [], problems: [] }))
    // Each of the catalogue's problems is logged by the claws themselves (ScriptClaws), once.
    yield* addClawTools(claws, catalog.tools, clientGone)
    const lock = yield* Semaphore.make(1)
    const checkParts = HostMessage.partsChecker(maxMessageBytes)
    yield* server.addTool({ tool: askTool, annotations: Context.empty(), handle: untilGone(clientGone)(ask(agentContext, lock, checkParts)) })
  }))
