/**
 * Why the runtime directory cannot be used for this run. Every refusal
 * names the path and what to do; `reason` is what a caller branches on, and
 * `pid` is the live run that holds the directory, when one does.
 */
import * as Data from "effect/Data"

export class RuntimeDirError extends Data.TaggedError("RuntimeDirError")<{
  readonly reason:
    /** A live run holds it (or claimed it a moment before us). */
    | "in-use"
    | "symlink"
    /** Owned by another uid. */
    | "foreign-owner"
    /** Ours, but open to group or others, and not made by us. */
    | "not-private"
    | "not-directory"
    /** An entry named like a pipe or the pid file that planckclaw did not create. */
    | "foreign-entry"
    /** A system call failed (permission, disk, mkfifo). */
    | "io"
  readonly message: string
  readonly pid?: number
  readonly cause?: unknown
}> {}
