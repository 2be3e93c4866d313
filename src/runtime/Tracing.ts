/**
 * Spans that cost nothing when nobody records them. Effect's built-in
 * tracer only keeps a span in memory, yet `Effect.withSpan` still builds it,
 * copies the fiber's context to carry it and ends it: on a turn of a few
 * hundred microseconds that shows in the profile (issue 11). So a span is
 * made only when the fiber has another tracer (OpenTelemetry, a test's
 * recorder) and tracing is on; never with a stack trace.
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"

/** Whether spans made on `fiber` reach a tracer someone installed. */
export const recording = (fiber: Fiber.Fiber<unknown, unknown>): boolean =>
  fiber.getRef(References.TracerEnabled) && fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer

/**
 * `self` in a span named `name` when `recording` (see above), without a
 * stack trace (`Effect.fn` and withSpan's default options capture one per call).
 */
export const span = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  recording: boolean,
  name: string,
  attributes?: Record<string, unknown>
): Effect.Effect<A, E, R> =>
  !recording
    ? self
    : Effect.withSpan(self, name, attributes === undefined ? { captureStackTrace: false } : { attributes, captureStackTrace: false })

/** `span`, deciding per run whether anyone records it: for an effect built before its fiber is known. */
export const withSpan = (name: string, attributes?: Record<string, unknown>) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber<A, E, R>((fiber) => span(self, recording(fiber), name, attributes))
