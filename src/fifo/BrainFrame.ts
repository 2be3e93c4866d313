/**
 * brain_in / brain_out: one compact JSON document, then an empty line; a
 * bridge that gives up answers `{"error":"timeout"|"fatal"}`. Pure codec.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type MessagesRequest, MessagesRequest as MessagesRequestSchema, type Misconfigured } from "../Brain.js"
import { MalformedMessage, compactJson, excerpt } from "./Framing.js"

/** Compact single-line JSON, then the empty line that ends a brain frame. */
export const encodeBrainFrame = (value: unknown): Either.Either<string, MalformedMessage> =>
  Either.map(compactJson(value), (json) => `${json}\n\n`)

/**
 * What a brain bridge answers when it gives up. A failure caused by the
 * settings adds `misconfigured` ({problem, setting}, never a value) beside
 * `error`: any root-level `error` key means failure, so an older agent reads
 * it as a plain fatal answer.
 */
export const brainErrorFrame = (reason: "timeout" | "fatal", misconfigured?: Misconfigured): string =>
  misconfigured === undefined
    ? `{"error":"${reason}"}\n\n`
    : `${JSON.stringify({ error: reason, misconfigured: { problem: misconfigured.problem, setting: misconfigured.setting } })}\n\n`

// Fields the schema does not know (temperature, tool_choice, …) travel on untouched.
const decodeRequest = Schema.decodeUnknownEither(MessagesRequestSchema, { onExcessProperty: "preserve" })

/** Reads a brain request frame as a bridge receives it. */
export const decodeBrainRequest = (frame: string): Either.Either<MessagesRequest, MalformedMessage> => {
  const parsed = Either.try({
    try: () => JSON.parse(frame) as unknown,
    catch: () => new MalformedMessage({ message: `brain request is not JSON: ${excerpt(frame)}` })
  })
  return Either.flatMap(parsed, (json) =>
    Either.mapLeft(decodeRequest(json), (error) =>
      new MalformedMessage({
        message: `brain request is not a Messages API request: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
      })))
}
