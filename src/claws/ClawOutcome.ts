/**
 * What the model is told of a claw's run (ScriptClaws): its stdout as the
 * result, cut at the output cap with the cut marked; on a non-zero exit, a
 * signal or a stderr flood, an error with what it printed, an excerpt of its
 * stderr and what ended it. Invalid UTF-8 is replaced, never fatal. A run
 * the spawn helper's death cut short says so.
 */
import type { ToolResult } from "../ports/Claws.js"
import type * as ChildProcess from "../runtime/process/ChildProcess.js"

/** Drops a multi-byte UTF-8 sequence cut short by the output cap. */
const dropIncompleteTail = (bytes: Uint8Array): Uint8Array => {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back] ?? 0
    if ((byte & 0xc0) === 0x80) continue // continuation byte: keep looking for the lead
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return length > back ? bytes.subarray(0, bytes.length - back) : bytes
  }
  return bytes
}

// Invalid UTF-8 becomes U+FFFD rather than an error.
const utf8 = new TextDecoder("utf-8", { fatal: false })

const decoded = (bytes: Uint8Array, truncated: boolean): string => utf8.decode(truncated ? dropIncompleteTail(bytes) : bytes)

/** Why the claw ended, when that makes its call an error. */
const endedBy = (name: string, outcome: ChildProcess.RunOutcome, request: ChildProcess.RunRequest): string =>
  outcome.flooded === "stderr"
    ? `[tool ${name} was stopped: it wrote more than ${request.stderrMax + request.floodAllowance} bytes to stderr]`
    : outcome.exitCode !== null
    ? `[tool ${name} exited with code ${outcome.exitCode}]`
    : `[tool ${name} was killed by ${outcome.signal ?? "a signal"}]`

export const formatOutcome = (name: string, outcome: ChildProcess.RunOutcome, request: ChildProcess.RunRequest): ToolResult => {
  const stdout = decoded(outcome.stdout, outcome.stdoutTruncated).trimEnd()
  const truncation = outcome.stdoutTruncated ? `\n[output truncated at ${request.stdoutMax} bytes]` : ""
  // Killed by us for flooding its result: its exit status says nothing about the tool, what it printed is the result.
  if (outcome.flooded === "stdout" || (outcome.flooded === null && outcome.exitCode === 0)) {
    // An empty result would be an empty frame on the claw FIFO and says nothing to the model.
    return { content: stdout === "" && truncation === "" ? "(no output)" : `${stdout}${truncation}`, isError: false }
  }
  const stderr = decoded(outcome.stderr, outcome.stderrTruncated).trim()
  const parts = [
    stdout === "" ? "" : `${stdout}${truncation}`,
    stderr === "" ? "" : `stderr: ${stderr}${outcome.stderrTruncated ? " […]" : ""}`,
    endedBy(name, outcome, request)
  ]
  return { content: parts.filter((part) => part !== "").join("\n"), isError: true }
}

/**
 * A call the spawn helper's death cut short (the OOM killer): the claw may
 * have run, so not "could not be started"; the helper's words and the
 * claw's path are for the log.
 */
export const cutShort = (name: string, helperEnded: string): ToolResult => ({
  content: `Tool ${name} was cut short: the process that runs claws (planckclaw's spawn helper) ${helperEnded} ` +
    `during the call, and what the claw started was stopped with it; it may have done part of its work`,
  isError: true
})
