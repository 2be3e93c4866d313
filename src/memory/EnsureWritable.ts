/**
 * The start-up check of a memory directory (see `ensureWritable`).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { describeError, errnoCode } from "../runtime/Errors.js"
import * as Layout from "./Layout.js"
import { fromFileError, fsEffect, MemoryError } from "./MemoryDir.js"
import * as PromptFiles from "./PromptFiles.js"
import { heldByRun } from "./RunHeld.js"
import * as SafeFile from "../runtime/SafeFile.js"

const tolerated = new Set(["ENOSPC", "EDQUOT"])

/**
 * Makes sure the memory directory exists and is writable, and that no file
 * the agent writes is a link, a non-regular file or someone else's: a clear
 * error at start-up beats a failure on the first reply. A full disk is only
 * a warning: turns are answered, and stored once space returns. A directory
 * this process's run holds (MemoryHold) was checked just before its lock was
 * taken: the memory layer's own check is then skipped, as it found the same.
 */
export const ensureWritable = (directory: string): Effect.Effect<void, MemoryError> =>
  Effect.suspend(() => heldByRun(path.resolve(directory)) ? Effect.void : probe(directory))

/**
 * That no file the agent writes is a link, a non-regular file or someone
 * else's, without opening any, and that soul.md and summary.md are within
 * their limit (PromptFiles): what a service's agent checks at its start
 * (a few lstat calls), as a run does, so a planted or oversize file is a
 * refusal before its first message is accepted rather than a failed turn.
 */
export const checkFiles = (paths: Layout.Paths): Result.Result<void, MemoryError> => {
  for (const file of Layout.written(paths)) {
    const checked = SafeFile.check(file)
    if (Result.isFailure(checked)) return Result.fail(fromFileError(checked.failure))
  }
  return PromptFiles.checkAll([paths.soul, paths.summary])
}

const probe = (directory: string): Effect.Effect<void, MemoryError> =>
  Effect.gen(function*() {
    const probed = yield* fsEffect(`memory directory ${directory} is not writable`, () => {
      Layout.makeDirectories(directory)
      // access(2) says yes to root on a read-only or immutable directory: only a real write tells.
      const probe = path.join(directory, `.planckclaw-probe-${process.pid}`)
      Result.try(() => fs.unlinkSync(probe))
      const created = Result.try(() => {
        fs.writeFileSync(probe, "", { mode: 0o600, flag: "wx" })
        fs.unlinkSync(probe)
      })
      if (Result.isFailure(created)) {
        const code = errnoCode(created.failure)
        if (code === undefined || !tolerated.has(code)) return Result.fail(new MemoryError({
          reason: "unwritable",
          message: `memory directory ${directory} is not writable: ${describeError(created.failure)}`,
          cause: created.failure
        }))
      }
      const paths = Layout.files(directory)
      const files = checkFiles(paths)
      if (Result.isFailure(files)) return Result.fail(files.failure)
      if (fs.existsSync(paths.history)) fs.accessSync(paths.history, fs.constants.R_OK | fs.constants.W_OK)
      return Result.succeed(Result.isFailure(created))
    }, "unwritable")
    if (probed) {
      const free = SafeFile.freeBytes(directory)
      yield* Effect.logWarning(
        `memory directory ${directory} is full (${free ?? "unknown"} bytes free): replies are sent, ` +
          "and exchanges are stored once space returns"
      )
    }
  })
