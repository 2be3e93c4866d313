/** Checks on untrusted JSON values (tool inputs, answers of models and bridges). */

/** A JSON object: not null, not an array. */
export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** What a JSON value is, for an error message: "null", "an array", "a string", … */
export const describeJsonType = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`
