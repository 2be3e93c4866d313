/**
 * Logs go to stderr, one line each, so stdout carries only replies (the
 * terminal bridge and scripts piping `planckclaw run` rely on that).
 */
import { Cause, HashMap, Layer, Logger, LogLevel } from "effect"

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
