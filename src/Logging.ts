/**
 * Logs go to stderr, one line each, so stdout carries only replies (the
 * terminal bridge and scripts piping `planckclaw run` rely on that).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { onOff } from "./config/ConfigRange.js"

/** PLANCKCLAW_DEBUG: `1` or `true` (any case) turns it on, `0` or `false` off; anything else is refused. */
export const DebugConfig = onOff("PLANCKCLAW_DEBUG")

const stderrLogger = Logger.make(({ annotations, cause, logLevel, message }) => {
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  const fields = HashMap.reduce(annotations, "", (acc, value, key) => `${acc} ${key}=${String(value)}`)
  const detail = Cause.isEmpty(cause) ? "" : `\n${Cause.pretty(cause)}`
  process.stderr.write(`planckclaw ${logLevel.label.toLowerCase()}: ${text}${fields}${detail}\n`)
})

export const layer = (debug: boolean): Layer.Layer<never> =>
  Layer.merge(
    Logger.replace(Logger.defaultLogger, stderrLogger),
    Logger.minimumLogLevel(debug ? LogLevel.Debug : LogLevel.Info)
  )

/**
 * Runs `self` with Effect's default logger (which writes to standard output)
 * swapped for the stderr logger, so the library never writes logs where a
 * host's replies or data may go. A host's own loggers are left alone.
 */
export const toStderr = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locallyWith(self, FiberRef.currentLoggers, (loggers) =>
    HashSet.has(loggers, Logger.defaultLogger)
      ? HashSet.add(HashSet.remove(loggers, Logger.defaultLogger), stderrLogger)
      : loggers)
