/**
 * Logs go to stderr, one line each, so stdout carries only replies (the
 * terminal bridge and scripts piping `planckclaw run` rely on that).
 */
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"

/** PLANCKCLAW_DEBUG: `1` or `true` (any case) turns it on; anything else is off, as in the brain. */
export const DebugConfig = Config.string("PLANCKCLAW_DEBUG").pipe(
  Config.withDefault("0"),
  Config.map((value) => ["1", "true"].includes(value.trim().toLowerCase()))
)

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
