/**
 * Logs go to stderr, one line each, so stdout carries only replies (the
 * terminal bridge and scripts piping `planckclaw run` rely on that).
 */
import * as Cause from "effect/Cause"
import * as HashMap from "effect/HashMap"
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
