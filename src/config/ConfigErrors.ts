/** Turns a ConfigError tree into lines a user can act on: which key, what was expected. */
import * as ConfigError from "effect/ConfigError"

interface Problem {
  readonly missing: boolean
  readonly text: string
}

const problems = (error: ConfigError.ConfigError): Array<Problem> =>
  ConfigError.reduceWithContext(error, undefined, {
    andCase: (_, left: Array<Problem>, right: Array<Problem>) => [...left, ...right],
    // Fallback sources (flags, environment, config.env) each add "not set":
    // a value found but invalid in one of them is the real story.
    orCase: (_, left: Array<Problem>, right: Array<Problem>) => {
      const both = [...left, ...right]
      const invalid = both.filter((problem) => !problem.missing)
      return invalid.length > 0 ? invalid : both
    },
    // An empty path is a check across keys, whose message names them.
    invalidDataCase: (_, path, message) => [{ missing: false, text: path.length === 0 ? message : `${path.join(".")}: ${message}` }],
    missingDataCase: (_, path) => [{ missing: true, text: `${path.join(".")} is not set` }],
    sourceUnavailableCase: (_, path, message) => [{ missing: false, text: `${path.join(".")}: ${message}` }],
    unsupportedCase: (_, path, message) => [{ missing: false, text: `${path.join(".")}: ${message}` }]
  })

export const describe = (error: ConfigError.ConfigError): string =>
  `configuration error: ${[...new Set(problems(error).map((problem) => problem.text))].join("; ")}`
