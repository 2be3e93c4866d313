/**
 * brain_in / brain_out: one compact JSON document, then an empty line; a
 * bridge that gives up answers `{"error":"timeout"|"fatal"}`. Pure codec.
 */
import * as Result from "effect/Result"
import type { MessagesRequest, Misconfigured } from "../ports/Brain.js"
import { MalformedMessage, compactJson } from "../runtime/Framing.js"
import * as KeptJson from "../runtime/KeptJson.js"

// The reading side lives in BrainFrameDecode; its callers keep importing it from here.
export { decodeBrainRequest, plainBrainAnswer } from "./BrainFrameDecode.js"

/** Compact single-line JSON, then the empty line that ends a brain frame. */
export const encodeBrainFrame = (value: unknown): Result.Result<string, MalformedMessage> =>
  Result.map(compactJson(value), (json) => `${json}\n\n`)

/**
 * The agent's request frames (compact JSON, then the empty line), their
 * JSON assembled from the pieces kept since the last request (KeptJson):
 * the bytes are exactly `encodeBrainFrame`'s, which also writes, whole, a
 * request the kept pieces cannot, and gives its error.
 */
export const makeRequestFrameEncoder = (): ((request: MessagesRequest) => Result.Result<string, MalformedMessage>) => {
  const assemble = KeptJson.make("\n\n")
  return (request) => {
    const frame = assemble(request)
    return frame !== undefined ? Result.succeed(frame) : encodeBrainFrame(request)
  }
}

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
