/**
 * Logs go to stderr, one line each, so stdout carries only replies (the
 * terminal bridge and scripts piping `planckclaw run` rely on that).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import { switchOf } from "../config/ConfigRange.js"
import { Debug } from "../config/settings/Agent.js"

/** PLANCKCLAW_DEBUG: `1` or `true` (any case) turns it on, `0` or `false` off; anything else is refused. */
export const DebugConfig = switchOf(Debug)

const stderrLogger = Logger.make(({ cause, fiber, logLevel, message }) => {
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  let fields = ""
  for (const key in annotations) fields += ` ${key}=${String(annotations[key])}`
  const detail = cause.reasons.length === 0 ? "" : `\n${Cause.pretty(cause)}`
  process.stderr.write(`planckclaw ${logLevel.toLowerCase()}: ${text}${fields}${detail}\n`)
})

/** The stderr logger in place of every other, and the level `debug` asks for. */
export const layer = (debug: boolean): Layer.Layer<never> =>
  Layer.merge(
    Logger.layer([stderrLogger]),
    Layer.succeed(References.MinimumLogLevel, debug ? "Debug" : "Info")
  )

/**
 * Runs `self` with Effect's default logger (which writes to standard output)
 * swapped for the stderr logger, so the library never writes logs where a
 * host's replies or data may go. A host's own loggers are left alone.
 */
export const toStderr = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.updateService(self, References.CurrentLoggers, (loggers) => {
    if (!loggers.has(Logger.defaultLogger)) return loggers
    const swapped = new Set(loggers)
    swapped.delete(Logger.defaultLogger)
    swapped.add(stderrLogger)
    return swapped
  })
