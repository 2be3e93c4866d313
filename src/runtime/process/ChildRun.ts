/**
 * What a run of one child process (ChildProcess.run) is asked and answers:
 * the command, its working directory and output caps; its output, exit
 * status and flood; the failure to start it.
 */
import * as Data from "effect/Data"

/**
 * Where a run's process works: a directory that exists, or a private one
 * made for the run in `parent` (see `privateDirectory`) and removed with
 * everything in it after the run.
 */
export type WorkingDirectory = string | { readonly privateIn: string; readonly prefix: string }

export interface RunRequest {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: WorkingDirectory
  readonly env: Readonly<Record<string, string>>
  /** Stdout bytes kept; the rest is discarded and `stdoutTruncated` set. */
  readonly stdoutMax: number
  /** Stderr bytes kept, for an excerpt in error reports. */
  readonly stderrMax: number
  /**
   * Bytes tolerated on a stream past what is kept of it before the group is
   * killed: a tool that prints a little too much still finishes with its
   * exit status; an endless writer (read even to discard: half a core at
   * 1 GB/s here) is stopped.
   */
  readonly floodAllowance: number
}

/** The stream whose flood got the group killed. */
export type Flooded = "stdout" | "stderr"

export interface RunOutcome {
  readonly stdout: Uint8Array
  readonly stdoutTruncated: boolean
  readonly stderr: Uint8Array
  readonly stderrTruncated: boolean
  /** `null` when the process ended by a signal. */
  readonly exitCode: number | null
  readonly signal: NodeJS.Signals | null
  /** The group was killed because this stream went past what is kept of it plus `floodAllowance`; `null` if not. */
  readonly flooded: Flooded | null
}

export class SpawnError extends Data.TaggedError("SpawnError")<{
  readonly message: string
  readonly cause: unknown
}> {}
