/** Turns a ConfigError tree into lines a user can act on: which key, what was expected. */
import { ConfigError } from "effect"

const leaves = (error: ConfigError.ConfigError): Array<string> =>
  ConfigError.reduceWithContext(error, undefined, {
    andCase: (_, left: Array<string>, right: Array<string>) => [...left, ...right],
    orCase: (_, left: Array<string>, right: Array<string>) => [...left, ...right],
    invalidDataCase: (_, path, message) => [`${path.join(".") || "setting"}: ${message}`],
    missingDataCase: (_, path) => [`${path.join(".")} is not set`],
    sourceUnavailableCase: (_, path, message) => [`${path.join(".")}: ${message}`],
    unsupportedCase: (_, path, message) => [`${path.join(".")}: ${message}`]
  })

export const describe = (error: ConfigError.ConfigError): string =>
  `configuration error: ${[...new Set(leaves(error))].join("; ")}`
