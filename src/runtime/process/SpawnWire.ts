/**
 * The lines between this process and its spawn helper (SpawnHelper.ts), one
 * JSON document each. Both ends are this package, started together, so a
 * line that does not decode is a bug of ours: said as such, never guessed at.
 */
import * as Schema from "effect/Schema"
import { defaultMaxBlockBytes } from "../Framing.js"
import { madeOnFirstCall } from "../FirstCall.js"

const Id = Schema.Number

/** Run one request (ChildProcess.RunRequest) and answer Done or Failed with its id. */
export const RunLine = Schema.TaggedStruct("Run", {
  id: Id,
  command: Schema.String,
  args: Schema.Array(Schema.String),
  // ChildProcess.WorkingDirectory: a directory, or a private one the helper makes and removes.
  cwd: Schema.Union([Schema.String, Schema.Struct({ privateIn: Schema.String, prefix: Schema.String })]),
  env: Schema.Record(Schema.String, Schema.String),
  stdoutMax: Schema.Number,
  stderrMax: Schema.Number,
  floodAllowance: Schema.Number
})

/** Kill the run's group and answer Stopped once it is reaped (or was done already). */
export const StopLine = Schema.TaggedStruct("Stop", { id: Id })

export const ToHelper = Schema.Union([RunLine, StopLine])
export type ToHelper = typeof ToHelper.Type

/** On any answer: what the run logged in the helper (a working directory it could not remove), for the agent's log. */
const Warnings = Schema.optional(Schema.Array(Schema.String))

/** A run's outcome (ChildProcess.RunOutcome), its output in base64. */
export const DoneLine = Schema.TaggedStruct("Done", {
  id: Id,
  stdout: Schema.String,
  stdoutTruncated: Schema.Boolean,
  stderr: Schema.String,
  stderrTruncated: Schema.Boolean,
  exitCode: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String),
  flooded: Schema.NullOr(Schema.Literals(["stdout", "stderr"])),
  warnings: Warnings
})

/** The run could not start (ChildProcess.SpawnError); `code` is the system error's, when there was one. */
export const FailedLine = Schema.TaggedStruct("Failed", {
  id: Id,
  message: Schema.String,
  code: Schema.optional(Schema.String),
  warnings: Warnings
})

export const StoppedLine = Schema.TaggedStruct("Stopped", { id: Id, warnings: Warnings })

export const FromHelper = Schema.Union([DoneLine, FailedLine, StoppedLine])
export type FromHelper = typeof FromHelper.Type

// Made at the first line, not at load: every `run` loads this module, most never start a claw.
export const decodeToHelper = madeOnFirstCall(() => Schema.decodeUnknownResult(Schema.fromJsonString(ToHelper)))
export const decodeFromHelper = madeOnFirstCall(() => Schema.decodeUnknownResult(Schema.fromJsonString(FromHelper)))

/**
 * A wire line's bound, for the line framer both ends cut their input with
 * (fifo/Framing.ts): a claw's output (1 MiB at most) in base64, or its input
 * and environment, fit with room to spare.
 */
export const maxLineBytes = defaultMaxBlockBytes
