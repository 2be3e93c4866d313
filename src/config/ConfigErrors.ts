/** Turns a ConfigError into lines a user can act on: which key, what was expected. */
import type * as Config from "effect/Config"
import * as SchemaIssue from "effect/SchemaIssue"

const format = SchemaIssue.makeFormatterDefault()

/** One line per problem found under `issue`, each naming its key. */
const problems = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): Array<string> => {
  switch (issue._tag) {
    case "Pointer":
      return problems(issue.issue, [...path, ...issue.path])
    case "Encoding":
      // A transformation (a redacted string, a number from text) over what was read: the inner issue says why.
      return problems(issue.issue, path)
    case "Composite":
    case "AnyOf":
      return issue.issues.flatMap((inner) => problems(inner, path))
    default: {
      const key = path.map(String).join(".")
      // A key that no source gives reaches the schema as nothing at all.
      if (issue._tag === "InvalidType" && issue.input === undefined) return [`${key} is not set`]
      if (issue._tag === "MissingKey") return [`${key} is not set`]
      const message = issue._tag === "InvalidValue" && typeof issue.annotations?.message === "string"
        ? issue.annotations.message
        : format(issue).split("\n")[0]!
      // An empty path is a check across keys, whose message names them.
      return [key === "" ? message : `${key}: ${message}`]
    }
  }
}

export const describe = (error: Config.ConfigError): string => {
  const lines = error.cause._tag === "SchemaError" ? problems(error.cause.issue, []) : [error.cause.message]
  return `configuration error: ${[...new Set(lines)].join("; ")}`
}
