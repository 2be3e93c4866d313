/**
 * A brain that replays a script: each request takes the next step. Every
 * request is recorded so tests can assert the exact JSON the agent sent.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { Brain, BrainError, type BrainService, type MessagesRequest, type MessagesResponse } from "../ports/Brain.js"

export type ScriptStep =
  | MessagesResponse
  | BrainError
  | ((request: MessagesRequest) => Effect.Effect<MessagesResponse, BrainError>)

export interface ScriptedBrain {
  readonly service: BrainService
  readonly requests: Effect.Effect<ReadonlyArray<MessagesRequest>>
}

export const make = (steps: ReadonlyArray<ScriptStep>): Effect.Effect<ScriptedBrain> =>
  Effect.gen(function*() {
    const requests = yield* Ref.make<ReadonlyArray<MessagesRequest>>([])
    const position = yield* Ref.make(0)
    const service: BrainService = {
      complete: (request) =>
        Effect.gen(function*() {
          // A deep copy: the agent may reuse arrays between rounds.
          yield* Ref.update(requests, (all) => [...all, structuredClone(request)])
          const index = yield* Ref.getAndUpdate(position, (n) => n + 1)
          const step = steps[index]
          if (step === undefined) {
            return yield* new BrainError({ reason: "fatal", detail: `script exhausted after ${steps.length} steps` })
          }
          if (step instanceof BrainError) return yield* step
          if (typeof step === "function") return yield* step(request)
          return step
        })
    }
    return { service, requests: Ref.get(requests) }
  })

export const layer = (handle: ScriptedBrain): Layer.Layer<Brain> => Layer.succeed(Brain, handle.service)

/** Helpers to write scripts tersely. */
export const text = (reply: string): MessagesResponse => ({
  content: [{ type: "text", text: reply }],
  stop_reason: "end_turn"
})

export const toolUse = (
  calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly input: unknown }>,
  preamble?: string
): MessagesResponse => ({
  content: [
    ...(preamble === undefined ? [] : [{ type: "text" as const, text: preamble }]),
    ...calls.map((call) => ({ type: "tool_use" as const, ...call }))
  ],
  stop_reason: "tool_use"
})
