/**
 * The compaction commit's file steps with their fsyncs on libuv's thread
 * pool, so the event loop answers the next message meanwhile. The same
 * system calls as Layout.writeNew / syncDirectory, in an order that keeps
 * the commit's guarantee: every next file is complete and synced before the
 * journal (the commit point) appears. The three next files are synced side
 * by side (their order never mattered: nothing reads them before the journal).
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as SafeFile from "../runtime/SafeFile.js"

/** fsync(2) off the event loop. */
export const fsyncOffLoop = (fd: number, file: string): Effect.Effect<void, SafeFile.MemoryFileFailed> =>
  Effect.callback((resume) => {
    fs.fsync(fd, (error) => resume(error === null ? Effect.void : Effect.fail(SafeFile.failed(file, error))))
  })

/** A next file created and written (not yet synced), still open. */
export interface Staged {
  readonly file: string
  readonly fd: number
  readonly ino: number
}

/** Creates `file` anew (a leftover of the same name goes first) and writes `data` whole; a partial file is removed. */
export const stage = (
  file: string,
  data: string | Buffer,
  how: number = SafeFile.flags.createNew
): Result.Result<Staged, SafeFile.MemoryFileError> => {
  SafeFile.removeLeftover(file)
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data
  return Result.flatMap(SafeFile.openWithStat(file, how), ({ fd, stat }) => {
    const written = SafeFile.appendAll(fd, file, bytes, 0)
    if (Result.isSuccess(written)) return Result.succeed({ file, fd, ino: stat.ino })
    Result.try(() => fs.closeSync(fd))
    // A partial file must not hold the space a full disk needs back.
    Result.try(() => fs.unlinkSync(file))
    return Result.fail(written.failure)
  })
}

/** Syncs the staged files side by side, then closes them all (whatever happened). */
export const syncAll = (staged: ReadonlyArray<Staged>): Effect.Effect<void, SafeFile.MemoryFileFailed> =>
  Effect.forEach(staged, (each) => fsyncOffLoop(each.fd, each.file), { concurrency: "unbounded", discard: true }).pipe(
    Effect.ensuring(Effect.sync(() => closeAll(staged)))
  )

export const closeAll = (staged: ReadonlyArray<Staged>) => {
  for (const each of staged) Result.try(() => fs.closeSync(each.fd))
}

/** Layout.writeNew off the event loop: created, written, synced, closed. */
export const writeNew = (file: string, data: string | Buffer): Effect.Effect<void, SafeFile.MemoryFileError> =>
  Effect.suspend(() => {
    const staged = stage(file, data)
    if (Result.isFailure(staged)) return Effect.fail(staged.failure)
    return Effect.tapError(syncAll([staged.success]), () => Effect.sync(() => Result.try(() => fs.unlinkSync(file))))
  })

/** Layout.syncDirectory off the event loop. */
export const syncDirectory = (directory: string): Effect.Effect<void, SafeFile.MemoryFileError> =>
  Effect.suspend(() => {
    const opened = Result.try({ try: () => fs.openSync(directory, "r"), catch: (error) => SafeFile.failed(directory, error) })
    if (Result.isFailure(opened)) return Effect.fail(opened.failure)
    const fd = opened.success
    return Effect.ensuring(fsyncOffLoop(fd, directory), Effect.sync(() => Result.try(() => fs.closeSync(fd))))
  })
