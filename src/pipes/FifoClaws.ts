/**
 * The agent's side of the claw FIFOs: `__list_tools__` or `{name}\t{input}`
 * on claw_in, one answer block on claw_out. Discovery answers a JSON array of
 * tool definitions; a call answers text, and `Unknown tool: NAME` or a text
 * beginning with `Error:` marks a failed tool.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type * as Scope from "effect/Scope"
import {
  Claws,
  ClawsError,
  type ClawsService,
  type ToolCatalog,
  ToolDefinition,
  type ToolProblem,
  ToolName,
  type ToolResult,
  unknownTool
} from "../ports/Claws.js"
import type { AbandonRequests } from "./Abandon.js"
import { askOnceMore, type FarEndExited, type FarEndExits, makeExchange } from "./Exchange.js"
import { type FifoError, type FifoPaths } from "./RuntimeDir.js"
import { decodeClawAnswer, encodeClawCall, listToolsRequest } from "./ClawFrame.js"
import { defaultMaxBlockBytes, type FrameTooLarge } from "../runtime/Framing.js"
import { madeOnFirstCall } from "../runtime/FirstCall.js"

export interface FifoClawsOptions {
  readonly paths: Pick<FifoPaths, "clawIn" | "clawOut">
  /** How long discovery may take; default 30 seconds. */
  readonly listTimeout?: Duration.Input
  /** How long one tool call may take; default 2 minutes. */
  readonly callTimeout?: Duration.Input
  /** Largest answer accepted; default 16 MiB. */
  readonly maxAnswerBytes?: number
  /** Where to hear that the bridge process exited (see Exchange), so a call it took fails at once. */
  readonly farEndExits?: FarEndExits
  /** A built-in bridge of this process, told of a request the agent gave up (see Abandon). */
  readonly abandon?: AbandonRequests
}

export const defaultListTimeout = Duration.seconds(30)
export const defaultCallTimeout = Duration.minutes(2)

/**
 * How long discovery is not asked again while one that timed out still
 * owes its answer. Asked anyway, each would first wait out the owed answer,
 * then its own timeout: a minute before every message with nobody on the
 * claw pipes (`--claw none` alone). It fails at once instead (the agent
 * answers without tools), and the request left in the pipe is answered by
 * a bridge that comes, which ends this. Asked again past this time, in case
 * the process that took it died unseen (one the run did not start).
 */
export const rediscoverAfter = Duration.minutes(5)

const decodeTool = madeOnFirstCall(() => Schema.decodeUnknownResult(ToolDefinition))
const isToolName = madeOnFirstCall(() => Schema.is(ToolName))
const formatIssue = madeOnFirstCall(() => SchemaIssue.makeFormatterDefault())

const problemOf = (element: unknown): ToolProblem | undefined => {
  if (typeof element !== "object" || element === null || !("problem" in element)) return undefined
  const problem = element.problem
  if (typeof problem !== "object" || problem === null || !("source" in problem) || !("reason" in problem)) return undefined
  return typeof problem.source === "string" && typeof problem.reason === "string"
    ? { source: problem.source, reason: problem.reason }
    : undefined
}

/** Reads a discovery answer: each element is checked on its own, so one bad declaration costs only itself. */
export const decodeCatalog = (answer: string): Result.Result<ToolCatalog, ClawsError> => {
  if (answer.startsWith("Error:")) return Result.fail(new ClawsError({ message: `claw bridge: ${answer}` }))
  const parsed = Result.try(() => JSON.parse(answer) as unknown)
  if (Result.isFailure(parsed) || !Array.isArray(parsed.success)) {
    return Result.fail(new ClawsError({ message: `claw bridge discovery answer is not a JSON array: ${answer.slice(0, 200)}` }))
  }
  const tools: Array<ToolDefinition> = []
  const problems: Array<ToolProblem> = []
  const seen = new Set<string>()
  parsed.success.forEach((element: unknown, index) => {
    const source = `claw bridge tool #${index + 1}`
    // A declaration the bridge could not read, as the built-in one sends it (ServeClaws.catalogFrameMemo).
    const reported = problemOf(element)
    if (reported !== undefined) return void problems.push(reported)
    const decoded = decodeTool(element)
    if (Result.isFailure(decoded)) {
      problems.push({ source, reason: formatIssue(decoded.failure.issue) })
    } else if (seen.has(decoded.success.name)) {
      problems.push({ source, reason: `duplicate tool name ${decoded.success.name}` })
    } else {
      seen.add(decoded.success.name)
      tools.push(decoded.success)
    }
  })
  return Result.succeed({ tools, problems })
}

/** Reads a call answer: `Unknown tool: NAME` and `Error: …` are failures. */
export const toToolResult = (name: string, answer: string): ToolResult => {
  const content = decodeClawAnswer(answer)
  return { content, isError: content.trim() === `Unknown tool: ${name}` || content.startsWith("Error:") }
}

export const make = (options: FifoClawsOptions): Effect.Effect<ClawsService, FifoError, Scope.Scope> =>
  Effect.gen(function*() {
    const listTimeout = Duration.fromInputUnsafe(options.listTimeout ?? defaultListTimeout)
    const callTimeout = Duration.fromInputUnsafe(options.callTimeout ?? defaultCallTimeout)
    const exchange = yield* makeExchange({
      requestPath: options.paths.clawIn,
      answerPath: options.paths.clawOut,
      maxAnswerBytes: options.maxAnswerBytes ?? defaultMaxBlockBytes,
      ...(options.farEndExits === undefined ? {} : { farEndExits: options.farEndExits }),
      ...(options.abandon === undefined ? {} : { abandon: options.abandon })
    })

    // Discovery runs before every message and the answer rarely changes:
    // the same bytes decode to the same catalogue, so the last one is kept.
    let last: { readonly answer: string; readonly catalog: ToolCatalog } | undefined
    const decodeOnce = (answer: string): Result.Result<ToolCatalog, ClawsError> => {
      if (last !== undefined && last.answer === answer) return Result.succeed(last.catalog)
      const decoded = decodeCatalog(answer)
      if (Result.isSuccess(decoded)) last = { answer, catalog: decoded.success }
      return decoded
    }

    /** When the last discovery timed out, while its answer is still owed (see rediscoverAfter). */
    let unansweredSince: number | undefined
    // Discovery changes nothing: after a crash of the bridge it is asked once more, of the restarted one.
    const ask = Effect.flatMap(
      askOnceMore(exchange, listToolsRequest, listTimeout).pipe(
        Effect.tap(() => Effect.sync(() => void (unansweredSince = undefined))),
        Effect.tapErrorTag("ExchangeTimeout", () =>
          Effect.map(Clock.currentTimeMillis, (now) => void (unansweredSince = now))),
        Effect.mapError((error) =>
          new ClawsError({
            message: error._tag === "ExchangeTimeout"
              ? `claw bridge did not answer discovery within ${Duration.format(listTimeout)}`
              : `claw bridge discovery failed: ${error.message}`,
            cause: error
          }))
      ),
      (answer) => Effect.fromResult(decodeOnce(answer))
    )
    const rediscoverMillis = Duration.toMillis(rediscoverAfter)
    const list: ClawsService["list"] = Effect.suspend(() => {
      const since = unansweredSince
      // The owed answer came late (and was discarded), or the bridge that owed it exited: ask again.
      if (since === undefined || exchange.unanswered() === 0) return ask
      return Effect.flatMap(Clock.currentTimeMillis, (now) =>
        now - since >= rediscoverMillis ? ask : Effect.fail(
          new ClawsError({
            message: `claw bridge has not answered discovery yet (none came within ${Duration.format(listTimeout)}); ` +
              `asked again once it answers, or ${Duration.format(rediscoverAfter)} after`
          })
        ))
    })

    // Made once: a call's path builds no handler objects or generators of its own (issue 11).
    const callFailures = (name: string) => ({
      ExchangeTimeout: () =>
        Effect.succeed<ToolResult>({
          content: `Error: tool ${name} did not answer within ${Duration.format(callTimeout)}`,
          isError: true
        }),
      FrameTooLarge: (error: FrameTooLarge) =>
        Effect.succeed<ToolResult>({
          content: `Error: result of tool ${name} is longer than ${error.limit} bytes`,
          isError: true
        }),
      FifoError: (error: FifoError) =>
        Effect.fail(new ClawsError({ message: `claw bridge call failed: ${error.message}`, cause: error })),
      // Not asked again: the tool may have done part of its work before the bridge died.
      FarEndExited: (_: FarEndExited) =>
        Effect.succeed<ToolResult>({
          content: `Error: the claw bridge exited before tool ${name} answered; it is being restarted`,
          isError: true
        })
    })

    const call: ClawsService["call"] = (name, input) => {
      // A name that could not be a tool could also break the framing: never send it.
      if (!isToolName(name)) return Effect.succeed(unknownTool(name))
      const request = encodeClawCall(name, input)
      if (Result.isFailure(request)) return Effect.fail(new ClawsError({ message: request.failure.message }))
      return exchange.ask(request.success, callTimeout).pipe(
        Effect.map((answer) => toToolResult(name, answer)),
        Effect.catchTags(callFailures(name))
      )
    }

    return { list, call }
  })

export const layer = (options: FifoClawsOptions): Layer.Layer<Claws, FifoError> => Layer.effect(Claws, make(options))
