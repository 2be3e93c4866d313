/**
 * The spans of a message: `Agent.respond` around `Turn.run`, one
 * `Brain.complete` per round and one `Claws.call` per tool call, recorded
 * by an in-memory tracer (Effect's own tracer, with every span it makes
 * kept in a list).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, type Tracer } from "effect"
import * as EffectTracer from "effect/Tracer"
import { Brain, BrainError, type BrainService } from "../../src/ports/Brain.js"
import * as ScriptedBrain from "../../src/brain/ScriptedBrain.js"
import * as InMemoryClaws from "../../src/claws/InMemoryClaws.js"
import * as Turn from "../../src/agent/Turn.js"
import { harness } from "../support/Harness.js"

const spanRecorder = Effect.gen(function*() {
  const base = yield* Effect.tracer
  const spans: Array<Tracer.Span> = []
  const tracer = EffectTracer.make({
    span: (options) => {
      const span = base.span(options)
      spans.push(span)
      return span
    },
    context: base.context
  })
  /** Every span so far: its name, its parent's name and its attributes. */
  const recorded = () =>
    spans.map((span) => ({
      name: span.name,
      parent: Option.match(span.parent, {
        onNone: () => undefined,
        onSome: (parent) => parent._tag === "Span" ? parent.name : parent.spanId
      }),
      attributes: Object.fromEntries(span.attributes)
    }))
  return { tracer, recorded }
})

const tool = (name: string): InMemoryClaws.InMemoryTool => ({
  definition: { name, description: name, input_schema: { type: "object", properties: {} } },
  run: () => Effect.succeed({ content: "done", isError: false })
})

const script = [
  ScriptedBrain.toolUse([{ id: "a", name: "first", input: {} }, { id: "b", name: "second", input: {} }]),
  ScriptedBrain.text("answer")
]

const turnSpans = [
  { name: "Brain.complete", parent: "Turn.run", attributes: { round: 0 } },
  { name: "Claws.call", parent: "Turn.run", attributes: { tool: "first" } },
  { name: "Claws.call", parent: "Turn.run", attributes: { tool: "second" } },
  { name: "Brain.complete", parent: "Turn.run", attributes: { round: 1 } }
]

/** The scripted turn with two tools, under `traced` (the tracer settings of a test). */
const scriptedTurn = <A, E, R>(traced: (turn: Effect.Effect<Turn.TurnOutcome>) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(ScriptedBrain.make(script), (brain) =>
    traced(Turn.run({
      snapshot: { soul: "s", summary: "", history: [] },
      text: "go",
      config: { model: "m", maxTokens: 10, maxToolRounds: 4 }
    }).pipe(Effect.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([tool("first"), tool("second")]))))))

describe("spans", () => {
  it.effect("a turn has its span, one per brain call with the round, one per tool call with the tool", () =>
    Effect.gen(function*() {
      const { recorded, tracer } = yield* spanRecorder
      const outcome = yield* scriptedTurn(Effect.withTracer(tracer))
      expect(outcome.reply).toBe("answer")
      // A span is recorded when it starts: the turn's comes first.
      expect(recorded()).toEqual([{ name: "Turn.run", parent: undefined, attributes: {} }, ...turnSpans])
    }))

  it.effect("spans capture no stack trace: a turn costs no more without a tracer", () =>
    Effect.gen(function*() {
      const { recorded, tracer } = yield* spanRecorder
      const brain = yield* ScriptedBrain.make([new BrainError({ reason: "timeout", detail: "test" })])
      const outcome = yield* Turn.run({
        snapshot: { soul: "s", summary: "", history: [] },
        text: "go",
        config: { model: "m", maxTokens: 10, maxToolRounds: 4 }
      }).pipe(
        Effect.provide(Layer.merge(ScriptedBrain.layer(brain), InMemoryClaws.layer([]))),
        Effect.withTracer(tracer)
      )
      expect(outcome.reply).toBe(Turn.APOLOGY)
      // A span made with a stack trace gets it as `code.stacktrace` when it fails.
      expect(recorded()).toEqual([
        { name: "Turn.run", parent: undefined, attributes: {} },
        { name: "Brain.complete", parent: "Turn.run", attributes: { round: 0 } }
      ])
    }))

  it.effect("a message's turn runs inside Agent.respond", () =>
    Effect.gen(function*() {
      const { recorded, tracer } = yield* spanRecorder
      const h = yield* harness({ script, tools: [tool("first"), tool("second")] }).pipe(Effect.withTracer(tracer))
      expect((yield* h.say("go")).text).toBe("answer")
      const names = recorded().filter((span) => ["Agent.respond", "Turn.run", "Brain.complete", "Claws.call"].includes(span.name))
      expect(names).toEqual([
        { name: "Agent.respond", parent: undefined, attributes: {} },
        { name: "Turn.run", parent: "Agent.respond", attributes: {} },
        ...turnSpans
      ])
    }))

  it.effect("without a tracer of its own a turn makes no span: nothing is built that nobody records", () =>
    Effect.gen(function*() {
      const seen: Array<string | undefined> = []
      // What the brain and a tool see as their current span.
      const current = Effect.map(Effect.option(Effect.currentSpan), (span) => {
        seen.push(Option.getOrUndefined(span)?.name)
      })
      const brain = yield* ScriptedBrain.make(script)
      const watched: BrainService = { complete: (request) => Effect.andThen(current, brain.service.complete(request)) }
      const watchedTool = (name: string): InMemoryClaws.InMemoryTool => ({
        ...tool(name),
        run: () => Effect.as(current, { content: "done", isError: false })
      })
      const outcome = yield* Turn.run({
        snapshot: { soul: "s", summary: "", history: [] },
        text: "go",
        config: { model: "m", maxTokens: 10, maxToolRounds: 4 }
      }).pipe(Effect.provide(Layer.merge(Layer.succeed(Brain, watched), InMemoryClaws.layer([watchedTool("first"), watchedTool("second")]))))
      expect(outcome.reply).toBe("answer")
      expect(seen).toEqual([undefined, undefined, undefined, undefined])
    }))

  it.effect("with tracing turned off, an installed tracer gets no span", () =>
    Effect.gen(function*() {
      const { recorded, tracer } = yield* spanRecorder
      const outcome = yield* scriptedTurn((turn) => turn.pipe(Effect.withTracer(tracer), Effect.withTracerEnabled(false)))
      expect(outcome.reply).toBe("answer")
      expect(recorded()).toEqual([])
    }))
})
