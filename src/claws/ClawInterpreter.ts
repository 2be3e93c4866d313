/**
 * Why an executable claw the system could not run did not start, when its
 * `#!` line is at fault: an interpreter that does not exist (`#!/bin/bash`
 * where there is no bash), is no absolute path, cannot be executed, or a
 * line ending in a carriage return (saved with Windows line endings). The
 * shell that starts the claw says only `exec: CLAW: not found` (exit 127)
 * or `Permission denied` (126), naming the claw, which exists; read only
 * after such an exit, so a call that ran costs nothing more. Likewise
 * after a failure of a claw without the execute bit, run with /bin/sh.
 * The line's reading (`readShebang`) is also an executable bridge's.
 */
import * as Fs from "node:fs"
import * as Result from "effect/Result"
import { describeError, errnoCode } from "../runtime/Errors.js"
import { printable } from "../runtime/Printable.js"

/** What Linux reads of a `#!` line (BINPRM_BUF_SIZE). */
const shebangBytes = 256

/** A script's `#!` line, read once for claws and for executable bridges (ExternalBridge). */
export interface Shebang {
  /** What follows `#!` up to the newline, as UTF-8 (bytes that are none replaced): for messages. */
  readonly line: string
  /**
   * The interpreter, split as the kernel splits it (blanks before it, the
   * first blank or NUL after it ends it; a carriage return is part of it),
   * in the bytes the kernel execs: as a path, it names the same file
   * whatever its encoding. Empty when the line names none.
   */
  readonly interpreter: Buffer
}

const isBlank = (byte: number | undefined): boolean => byte === 0x20 || byte === 0x09

/** The `#!` line of `file`, or undefined when it has none (or cannot be read: the kernel's own error then says what it can). */
export const readShebang = (file: string): Shebang | undefined => {
  const opened = Result.try(() => Fs.openSync(file, "r"))
  if (Result.isFailure(opened)) return undefined
  const buffer = Buffer.alloc(shebangBytes)
  const read = Result.try(() => Fs.readSync(opened.success, buffer, 0, shebangBytes, 0))
  Result.try(() => Fs.closeSync(opened.success))
  if (Result.isFailure(read) || read.success < 2 || buffer[0] !== 0x23 || buffer[1] !== 0x21) return undefined
  const newline = buffer.subarray(0, read.success).indexOf(0x0a)
  const line = buffer.subarray(2, newline === -1 ? read.success : newline)
  let start = 0
  while (isBlank(line[start])) start++
  let end = start
  while (end < line.length && !isBlank(line[end]) && line[end] !== 0) end++
  return { line: line.toString("utf8"), interpreter: Buffer.from(line.subarray(start, end)) }
}

/**
 * Why a claw without the execute bit that failed may have failed: it ran
 * with /bin/sh, as one without it does, though its `#!` line names another
 * interpreter (a Python claw whose mode a copy lost). Undefined when it has
 * no such line.
 */
export const ranWithShHint = (file: string): string | undefined => {
  const line = readShebang(file)?.line.trim()
  if (line === undefined || line === "" || line === "/bin/sh") return undefined
  return `it is not executable, so it ran with /bin/sh, not with its #! line (${printable(line)}): make it executable (chmod +x)`
}

/** What keeps the `#!` line of `file` from starting it, or undefined when the line is not at fault. */
export const interpreterProblem = (file: string): string | undefined => {
  const shebang = readShebang(file)
  if (shebang === undefined) return undefined
  if (shebang.line.endsWith("\r")) {
    return "its #! line ends with a carriage return (Windows line endings): convert them (dos2unix, or sed -i 's/\\r$//')"
  }
  const { interpreter } = shebang
  if (interpreter.length === 0) return undefined
  const named = `the interpreter on its #! line, ${printable(interpreter.toString("utf8"))},`
  // Relative to the claw's private working directory, where nothing is.
  if (interpreter[0] !== 0x2f) return `${named} is not an absolute path`
  const access = Result.try(() => Fs.accessSync(interpreter, Fs.constants.X_OK))
  if (Result.isSuccess(access)) return undefined
  return errnoCode(access.failure) === "ENOENT"
    ? `${named} does not exist`
    : `${named} cannot be executed (${printable(describeError(access.failure))})`
}
