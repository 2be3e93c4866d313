/**
 * Opening and writing memory files safely. A memory file is opened with
 * O_NOFOLLOW and checked on the same descriptor: a symbolic link, anything
 * but a regular file, or a file of another user is refused, so the agent
 * never writes through a link into, say, ~/.bashrc. A write either lands
 * whole or is cut back to where it began: no partial line stays behind.
 */
import * as fs from "node:fs"
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import { describeError, errnoCode } from "./Errors.js"

/** The file is not one the agent may use: a link, not a regular file, or someone else's. */
export class MemoryFileRefused extends Data.TaggedError("MemoryFileRefused")<{
  readonly path: string
  readonly message: string
}> {}

/** An operating-system failure on a memory file (ENOSPC, EACCES, ...). */
export class MemoryFileFailed extends Data.TaggedError("MemoryFileFailed")<{
  readonly path: string
  readonly code: string | undefined
  readonly message: string
}> {}

export type MemoryFileError = MemoryFileRefused | MemoryFileFailed

export const failed = (path: string, error: unknown) => {
  const message = describeError(error)
  // Node names the path for an open, not for a write or a sync.
  return new MemoryFileFailed({ path, code: errnoCode(error), message: message.includes(path) ? message : `${path}: ${message}` })
}

/**
 * This process's uid, asked once per `process.getuid` function: the call is
 * a system call each time and planckclaw never changes its uid; a replaced
 * function (a test seeing the files as another user's) is asked again.
 * Process-wide by nature: the uid is the process's, the same for every scope.
 */
let uidCache: { readonly of: (() => number) | undefined; readonly uid: number | undefined } | undefined
const currentUid = (): number | undefined => {
  const of = process.getuid
  if (uidCache === undefined || uidCache.of !== of) uidCache = { of, uid: of?.call(process) }
  return uidCache.uid
}

/** Why a file with this status may not be used as memory; undefined when it may. */
export const refusal = (path: string, stat: fs.Stats): MemoryFileRefused | undefined => {
  if (stat.isSymbolicLink()) {
    return new MemoryFileRefused({ path, message: `${path} is a symbolic link; refusing to follow it (make it a regular file)` })
  }
  if (!stat.isFile()) {
    return new MemoryFileRefused({ path, message: `${path} is not a regular file; refusing to use it as memory` })
  }
  const uid = currentUid()
  if (uid !== undefined && stat.uid !== uid) {
    return new MemoryFileRefused({
      path,
      message: `${path} is owned by uid ${stat.uid}, not by this user (uid ${uid}); refusing to use it as memory`
    })
  }
  return undefined
}

/** Checks a memory file without opening it: absent is fine. For start-up, to fail early and clearly. */
export const check = (path: string): Result.Result<void, MemoryFileError> => {
  const stat = Result.try(() => fs.lstatSync(path, { throwIfNoEntry: false }))
  if (Result.isFailure(stat)) return Result.fail(failed(path, stat.failure))
  if (stat.success === undefined) return Result.succeed(undefined)
  const refused = refusal(path, stat.success)
  return refused === undefined ? Result.succeed(undefined) : Result.fail(refused)
}

const { O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY } = fs.constants

export const flags = {
  read: O_RDONLY,
  append: O_RDWR | O_APPEND | O_CREAT,
  /** `append` for a file that must be there already: never made by the open. */
  appendExisting: O_RDWR | O_APPEND,
  rewrite: O_WRONLY | O_CREAT | O_TRUNC,
  createNew: O_WRONLY | O_CREAT | O_EXCL,
  /** A next file a run's history store takes over after the swap, as if opened with `append`. */
  createNewAppendable: O_RDWR | O_APPEND | O_CREAT | O_EXCL
} as const

/**
 * Opens a memory file: never through a link (O_NOFOLLOW), never blocking on
 * a FIFO (O_NONBLOCK), and only a regular file of this user.
 */
export const open = (path: string, how: number): Result.Result<number, MemoryFileError> =>
  Result.map(openWithStat(path, how), (opened) => opened.fd)

export interface Opened {
  readonly fd: number
  readonly stat: fs.Stats
}

/** `open`, with the status it checked the descriptor by (callers need not fstat again). */
export const openWithStat = (path: string, how: number): Result.Result<Opened, MemoryFileError> =>
  openChecked(path, how, (error) => Result.fail(failed(path, error)))

/**
 * `openWithStat` for a file that may be absent: undefined then. A new
 * agent's first message finds most of its files absent, and a failed open
 * throws an exception (5-8 µs each, against 1.3 for an lstat that finds
 * nothing), so an absent path is seen by an lstat first. A file made or
 * removed in between is what it would be a moment later or earlier.
 */
export const openIfPresent = (path: string, how: number): Result.Result<Opened | undefined, MemoryFileError> => {
  // Any other failure of the lstat (a path through a file) is the open's to report.
  const seen = Result.try(() => fs.lstatSync(path, { throwIfNoEntry: false }))
  return Result.isSuccess(seen) && seen.success === undefined
    ? Result.succeed(undefined)
    : openChecked(path, how, () => Result.succeed(undefined))
}

/** A descriptor held open, and the inode it was opened on. */
export interface Held {
  readonly fd: number
  readonly ino: number
}

export const closeHeld = (held: { readonly fd: number } | undefined) => {
  if (held !== undefined) Result.try(() => fs.closeSync(held.fd))
}

/** The held descriptor of `file` if `stat` is its file, else `file` opened anew (and held). */
export const heldFor = (
  file: string,
  held: Held | undefined,
  stat: fs.Stats | undefined
): Result.Result<Held & { readonly stat: fs.Stats | undefined }, MemoryFileError> => {
  if (held !== undefined && stat !== undefined && stat.ino === held.ino) return Result.succeed({ ...held, stat })
  closeHeld(held)
  return Result.map(openWithStat(file, flags.append), ({ fd, stat }) => ({ fd, ino: stat.ino, stat }))
}

/** `openIfPresent` for a path an lstat has just found: opened at once (undefined if it went in between). */
export const openFound = (path: string, how: number): Result.Result<Opened | undefined, MemoryFileError> =>
  openChecked(path, how, () => Result.succeed(undefined))

const openChecked = <B>(
  path: string,
  how: number,
  absent: (error: unknown) => Result.Result<B, MemoryFileError>
): Result.Result<Opened | B, MemoryFileError> => {
  const opened = Result.try(() => fs.openSync(path, how | O_NOFOLLOW | O_NONBLOCK, 0o600))
  if (Result.isFailure(opened)) {
    const code = errnoCode(opened.failure)
    if (code === "ENOENT") return absent(opened.failure)
    return Result.fail(
      code === "ELOOP"
        ? new MemoryFileRefused({ path, message: `${path} is a symbolic link; refusing to follow it (make it a regular file)` })
        : failed(path, opened.failure)
    )
  }
  const fd = opened.success
  const stat = Result.try(() => fs.fstatSync(fd))
  const refused = Result.isFailure(stat) ? failed(path, stat.failure) : refusal(path, stat.success)
  if (refused === undefined && Result.isSuccess(stat)) return Result.succeed({ fd, stat: stat.success })
  Result.try(() => fs.closeSync(fd))
  return Result.fail(refused ?? failed(path, new Error("no status")))
}

const using = <A, E>(path: string, fd: number, use: (fd: number) => Result.Result<A, E>): Result.Result<A, E | MemoryFileError> => {
  const result = Result.try({ try: () => use(fd), catch: (error) => failed(path, error) })
  Result.try(() => fs.closeSync(fd))
  return Result.flatMap(result, (inner): Result.Result<A, E | MemoryFileError> => inner)
}

/** Opens, uses and closes a memory file. */
export const withFile = <A, E>(
  path: string,
  how: number,
  use: (fd: number) => Result.Result<A, E>
): Result.Result<A, E | MemoryFileError> => Result.flatMap(open(path, how), (fd) => using(path, fd, use))

/** `withFile`, or `absent` when there is no such file; `use` gets the status the open's own check read. */
export const withFileIfPresent = <A, E, B>(
  path: string,
  how: number,
  absent: B,
  use: (fd: number, stat: fs.Stats) => Result.Result<A, E>
): Result.Result<A | B, E | MemoryFileError> =>
  Result.flatMap(openIfPresent(path, how), (opened): Result.Result<A | B, E | MemoryFileError> =>
    opened === undefined ? Result.succeed(absent) : using(path, opened.fd, (fd) => use(fd, opened.stat)))

/** Reads a memory file whole; undefined when it does not exist. */
export const read = (path: string): Result.Result<string | undefined, MemoryFileError> =>
  withFileIfPresent(path, flags.read, undefined, (fd) => Result.succeed(fs.readFileSync(fd, "utf8")))

/** The first `size` bytes of `fd` (fewer if it ends sooner), without a status of its own as readFileSync takes. */
export const readUpTo = (fd: number, size: number): Buffer => {
  const bytes = Buffer.allocUnsafe(size)
  let read = 0
  while (read < size) {
    const n = fs.readSync(fd, bytes, read, size - read, read)
    if (n === 0) break
    read += n
  }
  return bytes.subarray(0, read)
}

/**
 * Writes all of `data` at the end of `fd` (opened for appending), checking
 * every byte count. On a short or failed write the file is cut back to
 * `sizeBefore`, so the partial bytes never stay.
 */
export const appendAll = (
  fd: number,
  path: string,
  data: Buffer,
  sizeBefore: number
): Result.Result<void, MemoryFileFailed> => {
  for (let offset = 0; offset < data.length;) {
    const wrote = Result.try(() => fs.writeSync(fd, data, offset, data.length - offset))
    if (Result.isFailure(wrote) || wrote.success <= 0) {
      const cause = Result.isFailure(wrote) ? wrote.failure : undefined
      const cut = Result.try(() => fs.ftruncateSync(fd, sizeBefore))
      return Result.fail(
        new MemoryFileFailed({
          path,
          code: errnoCode(cause) ?? "ENOSPC",
          message: `writing ${path}: ${cause === undefined ? "no bytes written" : describeError(cause)} ` +
            `(${offset} of ${data.length} bytes written, ` +
            `${Result.isSuccess(cut) ? `cut back to ${sizeBefore} bytes` : `could not cut back: ${describeError(cut.failure)}`})`
        })
      )
    }
    offset += wrote.success
  }
  return Result.succeed(undefined)
}

/** Opens a memory file for appending (made if absent), appends `text` whole or not at all, and closes it. */
export const appendText = (path: string, text: string): Result.Result<void, MemoryFileError> =>
  Result.flatMap(openWithStat(path, flags.append), ({ fd, stat }) => {
    const written = appendAll(fd, path, Buffer.from(text, "utf8"), stat.size)
    Result.try(() => fs.closeSync(fd))
    return written
  })

/**
 * Removes a leftover of a file about to be created anew (a crash's, or a
 * link planted there: neither lstat nor unlink follows one). Looked for
 * first, as there usually is none: an unlink that fails builds and throws
 * an error, about 3.5 times the cost of the lstat that finds nothing. A
 * path that cannot even be looked at is left for the create to report.
 */
export const removeLeftover = (path: string): void => {
  const found = Result.try(() => fs.lstatSync(path, { throwIfNoEntry: false }))
  if (Result.isSuccess(found) && found.success !== undefined) Result.try(() => fs.unlinkSync(path))
}

/**
 * Replaces a memory file through a temporary file and a rename: a reader
 * sees the old content or the new, never a part.
 */
export const replace = (path: string, data: string | Buffer, sync = false): Result.Result<void, MemoryFileError> => {
  const temporary = `${path}.tmp`
  removeLeftover(temporary)
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data
  const written = withFile(temporary, flags.createNew, (fd) =>
    Result.flatMap(appendAll(fd, temporary, bytes, 0), () =>
      sync ? Result.try({ try: () => fs.fsyncSync(fd), catch: (error) => failed(temporary, error) }) : Result.succeed(undefined)))
  const renamed = Result.flatMap(written, () =>
    Result.try({ try: () => fs.renameSync(temporary, path), catch: (error) => failed(path, error) }))
  if (Result.isFailure(renamed)) Result.try(() => fs.unlinkSync(temporary))
  return renamed
}

/** Free bytes for this user on the filesystem holding `path`, when known. */
export const freeBytes = (path: string): number | undefined =>
  Result.getOrUndefined(Result.try(() => {
    const stats = fs.statfsSync(path)
    return stats.bavail * stats.bsize
  }))
