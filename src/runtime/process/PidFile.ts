/**
 * Reading the pid a run or a lock left behind: a file's content, or the
 * target of a symbolic link (a lock taken on a full disk, where a link still
 * fits because its target lives in the inode).
 */
import * as fs from "node:fs"
import * as Result from "effect/Result"

/** The pid recorded at `file`, or undefined when there is none or it is not a pid. */
export const readPidFileSync = (file: string): number | undefined => {
  const link = Result.try(() => fs.readlinkSync(file))
  const content = Result.isSuccess(link) ? link : Result.try(() => fs.readFileSync(file, "utf8"))
  const pid = Result.isSuccess(content) ? Number(content.success.trim()) : Number.NaN
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
}
