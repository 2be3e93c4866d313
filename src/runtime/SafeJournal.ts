/**
 * Append-only journals (the inbox's, Discord's outbox and owed messages,
 * serve's idempotency keys) read back safely: through SafeFile's checked
 * open, with a torn last record (power loss, a full disk) cut off.
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"
import { failed, type MemoryFileError, openIfPresent, readUpTo, withFileIfPresent } from "./SafeFile.js"

/**
 * An append-only journal's complete records ("" when there is no file). A
 * torn last record (power loss, full disk) is cut off: that needs no free space.
 */
export const read = (path: string): Result.Result<string, MemoryFileError> =>
  withFileIfPresent(path, fs.constants.O_RDWR, "", (fd, stat) => Result.succeed(completeRecords(fd, stat.size).text))

/** `read`'s records and the file left open for appending (O_APPEND) at their end; undefined when there is no file. */
export const open = (
  path: string
): Result.Result<{ readonly text: string; readonly fd: number; readonly size: number; readonly ino: number } | undefined, MemoryFileError> =>
  Result.flatMap(openIfPresent(path, fs.constants.O_RDWR | fs.constants.O_APPEND), (opened) => {
    if (opened === undefined) return Result.succeed(undefined)
    const records = Result.try({ try: () => completeRecords(opened.fd, opened.stat.size), catch: (error) => failed(path, error) })
    if (Result.isSuccess(records)) return Result.succeed({ ...records.success, fd: opened.fd, ino: opened.stat.ino })
    Result.try(() => fs.closeSync(opened.fd))
    return Result.fail(records.failure)
  })

/** A journal's complete records, `size` bytes long as its open found it (this process its only writer); a torn last one cut off. */
const completeRecords = (fd: number, size: number): { readonly text: string; readonly size: number } => {
  const bytes = readUpTo(fd, size)
  const end = bytes.lastIndexOf(0x0a) + 1
  if (end < bytes.length) fs.ftruncateSync(fd, end)
  return { text: bytes.toString("utf8", 0, end), size: end }
}
