/**
 * The bridge side of claw_in / claw_out: serve a Claws service on the far
 * ends of the pipes. With `--claw scripts` this runs in the agent's own
 * process and answers a discovery on every message, so it is plain
 * callbacks (as the agent's Exchange) rather than a Stream: the Stream, its
 * queue and its framing stages cost more than the listing itself. The
 * catalogue's JSON is kept while the service hands out the same tools array
 * (script discovery does until a claw changes).
 *
 * Requests are answered one at a time, in order, and every request gets
 * exactly one answer (an error answer when it cannot be served), so the
 * requester's order-based matching never slips.
 */
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import * as Result from "effect/Result"
import type * as Abandon from "./Abandon.js"
import type { ClawsError, ClawsService, ToolDefinition, ToolProblem, ToolResult } from "../ports/Claws.js"
import { type ClawRequest, decodeClawRequest, encodeClawAnswer } from "./ClawFrame.js"
import { type FifoError, type FifoPaths } from "./FifoPaths.js"
import { defaultMaxLineBytes, type Frame, makeLineFramer } from "../runtime/Framing.js"
import { listenReader, openWriter } from "./PipeEnd.js"

export interface ServeClawsOptions {
  /** Largest request line accepted. */
  readonly maxRequestBytes?: number
  /** Requests the agent in this process gave up: a claw running for one is killed (see Abandon). */
  readonly abandon?: Abandon.Abandon
}

/** Text of a tool result as the agent must read it back: a failed tool's answer begins with `Error:`. */
const resultText = (name: string, result: ToolResult): string =>
  !result.isError || result.content.startsWith("Error:") || result.content.trim() === `Unknown tool: ${name}`
    ? result.content
    : `Error: ${result.content}`

/**
 * The catalogue's answer as it goes on claw_out, `encodeClawAnswer` of
 * `JSON.stringify(tools)` with each declaration that could not be read after
 * them as `{"problem":{"source","reason"}}` (FifoClaws.decodeCatalog lists
 * it among the problems, so `/tools` names it; another reader sees an
 * element that is no tool), remembered for the last arrays seen (a
 * catalogue's are never modified). Compact JSON holds no line break (JSON
 * escapes them inside strings) and is never empty, so the frame is the JSON
 * and the empty line: the encoder's pass over the catalogue on every
 * listing changes nothing, and is skipped.
 */
const noProblems: ReadonlyArray<ToolProblem> = []

export const catalogFrameMemo = (): ((tools: ReadonlyArray<ToolDefinition>, problems?: ReadonlyArray<ToolProblem>) => string) => {
  let seen: ReadonlyArray<ToolDefinition> | undefined
  let seenProblems: ReadonlyArray<ToolProblem> | undefined
  let frame = ""
  return (tools, problems = noProblems) => {
    if (tools !== seen || problems !== seenProblems) {
      const elements = problems.length === 0 ? tools : [...tools, ...problems.map((problem) => ({ problem }))]
      frame = `${JSON.stringify(elements)}\n\n`
      seen = tools
      seenProblems = problems
    }
    return frame
  }
}

/** Lines waiting beyond which the pipe is left to hold the rest (a flooding peer cannot grow our buffer). */
const maxPendingLines = 64

const isBlankLine = (line: Frame) => Result.isSuccess(line) && (line.success === "" || line.success === "\r")

/**
 * Reads claw_in lines, answers each on claw_out: the catalog as a JSON array,
 * or the tool's result text. Empty lines are not requests and get no answer.
 * Fails only when a pipe breaks.
 */
export const serveClaws = (
  claws: ClawsService,
  paths: Pick<FifoPaths, "clawIn" | "clawOut">,
  options: ServeClawsOptions = {}
): Effect.Effect<never, FifoError> =>
  Effect.scoped(Effect.gen(function*() {
    const answers = yield* openWriter(paths.clawOut)
    const catalogFrame = catalogFrameMemo()
    const framer = makeLineFramer(options.maxRequestBytes ?? defaultMaxLineBytes)
    const pending: Array<Frame> = []
    let broken: FifoError | undefined
    let paused = false
    // This loop, finding no line, closes the latch and waits for a chunk or
    // a break to open it (which resumes it at once, as a Queue's wake-up on
    // the scheduler's next tick would not), then looks again.
    const arrived = Latch.makeUnsafe(false)
    const valve = yield* listenReader(paths.clawIn, {
      onChunk: (chunk) => {
        for (const line of framer.push(chunk)) if (!isBlankLine(line)) pending.push(line)
        if (pending.length >= maxPendingLines && !paused) {
          paused = true
          valve.pause()
        }
        arrived.openUnsafe()
      },
      onFailure: (error) => {
        broken = error
        arrived.openUnsafe()
      }
    })
    const open = () => {
      if (!paused) return
      paused = false
      valve.resume()
    }
    // The next line; lines that came before a break are still answered.
    const nextLine: Effect.Effect<Frame, FifoError> = Effect.suspend(() => {
      const line = pending.shift()
      if (line !== undefined) {
        if (pending.length === 0) open()
        return Effect.succeed(line)
      }
      if (broken !== undefined) return Effect.fail(broken)
      arrived.closeUnsafe()
      open()
      return Effect.andThen(arrived.await, nextLine)
    })

    const errorFrame = (message: string) => encodeClawAnswer(`Error: ${message}`)
    // Each effect gives the frame to write: the catalogue's is kept whole between listings.
    const answered = (effect: Effect.Effect<string, ClawsError>): Effect.Effect<string> =>
      effect.pipe(
        Effect.catchTag("ClawsError", (error) =>
          Effect.as(Effect.logWarning(`claws failed: ${error.message}`), errorFrame(error.message))),
        Effect.catchDefect((defect) => Effect.as(Effect.logError("claws crashed", defect), errorFrame("tool crashed")))
      )
    // Built once: a listing comes with every message.
    // Rejected declarations are the service's to report (script claws warn
    // once per problem); logging them here too would repeat them per message.
    // They travel with the listing, for `/tools`.
    const listAnswer = answered(Effect.map(claws.listOnRequest ?? claws.list, (catalog) => catalogFrame(catalog.tools, catalog.problems)))
    const abandon = options.abandon
    let read = 0
    const call = (request: Extract<ClawRequest, { readonly _tag: "Call" }>, number: number): Effect.Effect<string> => {
      const work = answered(Effect.map(claws.call(request.name, request.input), (result) => encodeClawAnswer(resultText(request.name, result))))
      // Given up by the agent (its turn cancelled): the claw is interrupted, which kills its process group.
      return abandon === undefined ? work : abandon.serve(number, work, errorFrame(`tool ${request.name} was cancelled`))
    }
    const answer = (request: ClawRequest, number: number): Effect.Effect<string> =>
      request._tag === "ListTools" ? listAnswer : call(request, number)
    const serveLine = (line: Frame, number: number): Effect.Effect<void, FifoError> =>
      Effect.flatMap(
        Result.match(Result.flatMap(line, decodeClawRequest), {
          onFailure: (error) =>
            Effect.logWarning(`bad request on claw_in: ${error.message}`).pipe(Effect.as(errorFrame(error.message))),
          onSuccess: (request) => answer(request, number)
        }),
        answers.write
      )

    // Not Effect.forever, which yields to the scheduler after every request:
    // each request already waits for its line, and the runtime still yields
    // a fiber that runs long without waiting.
    const serveAll: Effect.Effect<never, FifoError> = Effect.flatMap(nextLine, (line) => Effect.flatMap(serveLine(line, ++read), () => serveAll))
    return yield* serveAll
  }))
