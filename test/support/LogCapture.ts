/**
 * Log lines captured instead of printed, for tests that assert on what was
 * logged. Each line is `LEVEL message`, a message's parts joined by spaces.
 */
import { Effect, type Layer, Logger, Queue } from "effect"

export interface LogCapture {
  /** Every line so far, oldest first. */
  readonly lines: ReadonlyArray<string>
  /** The next line not taken yet, once it is logged. */
  readonly take: Effect.Effect<string>
  /** Takes lines until one matches `pattern`; that line. */
  readonly waitFor: (pattern: RegExp) => Effect.Effect<string>
  /** Replaces the default logger, for the effects it is provided to. */
  readonly layer: Layer.Layer<never>
}

export const captureLogs: Effect.Effect<LogCapture> = Effect.gen(function*() {
  const lines: Array<string> = []
  const unread = yield* Queue.unbounded<string>()
  const logger = Logger.make(({ logLevel, message }) => {
    const line = `${logLevel.toUpperCase()} ${(Array.isArray(message) ? message : [message]).map(String).join(" ")}`
    lines.push(line)
    Queue.offerUnsafe(unread, line)
  })
  const take = Queue.take(unread)
  return {
    lines,
    take,
    waitFor: (pattern) => Effect.repeat(take, { until: (line) => pattern.test(line) }),
    layer: Logger.layer([logger])
  }
})
