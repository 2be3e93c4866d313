/**
 * Reading the unknown values that Node and libraries fail with: the errno
 * code of a system error, and a one-line description of any failure.
 */

/** The `code` of a Node system error (`ENOENT`, `ENOSPC`, …), if it has one. */
export const errnoCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : undefined

/** A failure's message, or its text when it is not an Error. */
export const describeError = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/**
 * The innermost cause's message, with its errno code when the message lacks
 * it: `fetch failed` hides `connect ECONNREFUSED 127.0.0.1:9` one or more
 * `cause`s down. The depth is bounded, as a cause may loop.
 */
export const rootCause = (error: unknown): string => {
  let current: unknown = error
  for (let depth = 0; depth < 10 && current instanceof Error && current.cause instanceof Error; depth++) current = current.cause
  const message = describeError(current)
  const code = errnoCode(current)
  return code !== undefined && !message.includes(code) ? `${message} (${code})` : message
}
