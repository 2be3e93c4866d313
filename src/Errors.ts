/**
 * Reading the unknown values that Node and libraries fail with: the errno
 * code of a system error, and a one-line description of any failure.
 */

/** The `code` of a Node system error (`ENOENT`, `ENOSPC`, …), if it has one. */
export const errnoCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : undefined

/** A failure's message, or its text when it is not an Error. */
export const describeError = (error: unknown): string => (error instanceof Error ? error.message : String(error))
