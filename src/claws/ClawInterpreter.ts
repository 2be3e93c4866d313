/**
 * Why an executable claw the system could not run did not start, when its
 * `#!` line is at fault: an interpreter that does not exist (`#!/bin/bash`
 * where there is no bash), is no absolute path, cannot be executed, or a
 * line ending in a carriage return (saved with Windows line endings). The
 * shell that starts the claw says only `exec: CLAW: not found` (exit 127)
 * or `Permission denied` (126), naming the claw, which exists; read only
 * after such an exit, so a call that ran costs nothing more. Likewise
 * after a failure of a claw without the execute bit, run with /bin/sh.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Result from "effect/Result"
import { describeError, errnoCode } from "../runtime/Errors.js"
import { printable } from "../runtime/Printable.js"

/** What Linux reads of a `#!` line (BINPRM_BUF_SIZE). */
const shebangBytes = 256

/** The claw's first bytes, or undefined when it cannot be read (the outcome then says what it can). */
const head = (file: string): string | undefined => {
  const opened = Result.try(() => Fs.openSync(file, "r"))
  if (Result.isFailure(opened)) return undefined
  const buffer = Buffer.alloc(shebangBytes)
  const read = Result.try(() => Fs.readSync(opened.success, buffer, 0, shebangBytes, 0))
  Result.try(() => Fs.closeSync(opened.success))
  return Result.isSuccess(read) ? buffer.subarray(0, read.success).toString("utf8") : undefined
}

/** What follows `#!` on the first line of `file`, or undefined when it has none (or cannot be read). */
const shebang = (file: string): string | undefined => {
  const text = head(file)
  return text === undefined || !text.startsWith("#!") ? undefined : text.slice(2).split("\n")[0] ?? ""
}

/**
 * Why a claw without the execute bit that failed may have failed: it ran
 * with /bin/sh, as one without it does, though its `#!` line names another
 * interpreter (a Python claw whose mode a copy lost). Undefined when it has
 * no such line.
 */
export const ranWithShHint = (file: string): string | undefined => {
  const line = shebang(file)?.trim()
  if (line === undefined || line === "" || line === "/bin/sh") return undefined
  return `it is not executable, so it ran with /bin/sh, not with its #! line (${printable(line)}): make it executable (chmod +x)`
}

/** What keeps the `#!` line of `file` from starting it, or undefined when the line is not at fault. */
export const interpreterProblem = (file: string): string | undefined => {
  const line = shebang(file)
  if (line === undefined) return undefined
  if (line.endsWith("\r")) {
    return "its #! line ends with a carriage return (Windows line endings): convert them (dos2unix, or sed -i 's/\\r$//')"
  }
  // The kernel's split: blanks before the interpreter, the first blank after it ends it.
  const interpreter = line.replace(/^[ \t]+/, "").split(/[ \t]/)[0] ?? ""
  if (interpreter === "") return undefined
  const named = `the interpreter on its #! line, ${printable(interpreter)},`
  // Relative to the claw's private working directory, where nothing is.
  if (!Path.isAbsolute(interpreter)) return `${named} is not an absolute path`
  const access = Result.try(() => Fs.accessSync(interpreter, Fs.constants.X_OK))
  if (Result.isSuccess(access)) return undefined
  return errnoCode(access.failure) === "ENOENT"
    ? `${named} does not exist`
    : `${named} cannot be executed (${printable(describeError(access.failure))})`
}
