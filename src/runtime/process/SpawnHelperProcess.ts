/**
 * The spawn helper's process as this side sees it: starting it, writing to
 * it, reading its answers into the runs that wait for them, and failing those
 * runs when it ends. Apart from SpawnHelper.ts, which holds the service runs
 * go through (and says why there is a helper), so each reads in one sitting.
 */
import { type ChildProcess as NodeChild, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { describeError } from "../Errors.js"
import { printable } from "../Printable.js"
import * as Framing from "../Framing.js"
import { packageRoot } from "../../config/PackageRoot.js"
import * as ChildProcess from "./ChildProcess.js"
import { decodeFromHelper, type FromHelper, maxLineBytes, type ToHelper } from "./SpawnWire.js"

/**
 * The helper ended while it held the run: the command may have started and
 * done part of its work (its watchdog kills what it started), so this is no
 * SpawnError, which says it never ran.
 */
export class SpawnHelperDied extends Data.TaggedError("SpawnHelperDied")<{
  /** For the log: the command, how the helper ended and what it said on stderr. */
  readonly message: string
  /** How it ended, to follow its name: `was killed by SIGKILL`, `exited with code 70`. */
  readonly ended: string
}> {}

type Resume = (effect: Effect.Effect<ChildProcess.RunOutcome, ChildProcess.SpawnError | SpawnHelperDied>) => void

export interface Pending {
  readonly command: string
  readonly resume: Resume
  /** Set once the run was interrupted: called when the helper says its group is reaped. */
  onStopped?: (warnings: ReadonlyArray<string> | undefined) => void
}

export interface Helper {
  readonly child: NodeChild
  readonly pid: number
  readonly pending: Map<number, Pending>
  nextId: number
  /** Whether it answered anything yet: one that ends by itself before it did is not started again. */
  answered: boolean
  /** The start of what it wrote on stderr, for the report should it die. */
  stderr: string
  /** Why it was killed, when this process killed it. */
  killedBecause?: string
}

/** A scope's helper: the one running, or why runs go on from this process. */
export interface State {
  helper: Helper | undefined
  /** Why runs go on from this process; logged once (`warned`). */
  unavailable: string | undefined
  warned: boolean
}

/** The helper's program, bundled into dist/cli/spawn-helper.cjs (found from the package root: this module may be in a bundle). */
const helperScript = (): Result.Result<string, string> => {
  const root = packageRoot()
  const script = root === undefined ? undefined : path.join(root, "dist", "cli", "spawn-helper.cjs")
  return script !== undefined && fs.existsSync(script)
    ? Result.succeed(script)
    : Result.fail(`its program ${script ?? "dist/cli/spawn-helper.cjs"} is missing`)
}

export const send = (running: Helper, line: ToHelper): void => {
  running.child.stdin?.write(`${JSON.stringify(line)}\n`)
}

/** The handles keep this process alive only while a run waits for its answer. */
export const hold = (running: Helper, held: boolean): void => {
  for (const handle of [running.child, running.child.stdout]) {
    const h = handle as { ref?: () => void; unref?: () => void } | null
    if (held) h?.ref?.()
    else h?.unref?.()
  }
}

const settle = (running: Helper, id: number): Pending | undefined => {
  const pending = running.pending.get(id)
  if (pending === undefined) return undefined
  running.pending.delete(id)
  if (running.pending.size === 0) hold(running, false)
  return pending
}

const toOutcome = (line: Extract<FromHelper, { _tag: "Done" }>): ChildProcess.RunOutcome => ({
  stdout: Buffer.from(line.stdout, "base64"),
  stdoutTruncated: line.stdoutTruncated,
  stderr: Buffer.from(line.stderr, "base64"),
  stderrTruncated: line.stderrTruncated,
  exitCode: line.exitCode,
  signal: line.signal as NodeJS.Signals | null,
  flooded: line.flooded
})

/** What a run logged in the helper, logged here, by the fiber that waited for it. */
export const logged = (warnings: ReadonlyArray<string> | undefined): Effect.Effect<void> =>
  warnings === undefined ? Effect.void : Effect.forEach(warnings, (warning) => Effect.logWarning(warning), { discard: true })

const onLine = (running: Helper, frame: Framing.Frame): void => {
  const decoded = Result.flatMap(frame, (text) => decodeFromHelper(text))
  if (Result.isFailure(decoded)) {
    running.killedBecause = `it answered a line this process cannot read (${decoded.failure.message.slice(0, 300)})`
    running.child.kill("SIGKILL")
    return
  }
  running.answered = true
  const line = decoded.success
  const pending = settle(running, line.id)
  if (pending === undefined) return
  // An interrupted run waits only for its group to be gone: it is, once the run ended.
  if (pending.onStopped !== undefined) return pending.onStopped(line.warnings)
  if (line._tag === "Done") pending.resume(Effect.as(logged(line.warnings), toOutcome(line)))
  else if (line._tag === "Failed") {
    const cause = Object.assign(new Error(line.message), line.code === undefined ? {} : { code: line.code })
    pending.resume(Effect.andThen(logged(line.warnings), Effect.fail(new ChildProcess.SpawnError({ message: line.message, cause }))))
  }
}

const onExit = (state: State, running: Helper, code: number | null, signal: NodeJS.Signals | null): void => {
  if (state.helper === running) state.helper = undefined
  const how = running.killedBecause ?? (signal !== null ? `killed by ${signal}` : `exit code ${code}`)
  const ended = running.killedBecause !== undefined
    ? `was killed by planckclaw (${running.killedBecause})`
    : signal !== null
    ? `was killed by ${signal}`
    : `exited with code ${code}`
  const said = running.stderr.trim() === "" ? "" : `: ${running.stderr.trim().slice(0, 500)}`
  // One that ended by itself (or said what it should not) before any answer will not do better next time;
  // one killed by a signal (the OOM killer) may.
  const broken = !running.answered && (signal === null || running.killedBecause !== undefined)
  if (broken && state.unavailable === undefined) state.unavailable = `the spawn helper ended before it answered (${how}${said})`
  for (const id of [...running.pending.keys()]) {
    const pending = settle(running, id)!
    if (pending.onStopped !== undefined) pending.onStopped(undefined)
    else {
      const message = `${printable(pending.command)} was cut short: the spawn helper ended (${how}${said}) while it held the run; ` +
        `its watchdog kills what it started`
      pending.resume(Effect.fail(new SpawnHelperDied({ message, ended })))
    }
  }
}

const start = (state: State): Result.Result<Helper, string> => {
  const script = helperScript()
  if (Result.isFailure(script)) return Result.fail(script.failure)
  const spawned = Result.try({
    try: () =>
      spawn(process.execPath, [script.success], {
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
        env: { PATH: "/usr/bin:/bin" }
      }),
    catch: describeError
  })
  if (Result.isFailure(spawned)) return Result.fail(`node could not be started: ${spawned.failure}`)
  const child = spawned.success
  // A failed spawn (EAGAIN) reports through 'error' and has no pid; the exit says the rest.
  child.on("error", () => undefined)
  child.stdin?.on("error", () => undefined)
  if (child.pid === undefined) return Result.fail("node could not be started")
  const running: Helper = { child, pid: child.pid, pending: new Map(), nextId: 0, answered: false, stderr: "" }
  const lines = Framing.makeLineFramer(maxLineBytes)
  child.stdout?.on("data", (chunk: Buffer) => {
    for (const frame of lines.push(chunk)) onLine(running, frame)
  })
  child.stderr?.setEncoding("utf8")
  child.stderr?.on("data", (chunk: string) => {
    if (running.stderr.length < 2048) running.stderr += chunk
  })
  child.on("exit", (code, signal) => onExit(state, running, code, signal))
  ;(child.stdin as { unref?: () => void } | null)?.unref?.()
  ;(child.stderr as { unref?: () => void } | null)?.unref?.()
  hold(running, false)
  return Result.succeed(running)
}

export const current = (state: State): Result.Result<Helper, string> => {
  if (state.unavailable !== undefined) return Result.fail(state.unavailable)
  const { helper } = state
  if (helper !== undefined && helper.child.exitCode === null && helper.child.signalCode === null) {
    return Result.succeed(helper)
  }
  const started = start(state)
  if (Result.isFailure(started)) state.unavailable = started.failure
  else state.helper = started.success
  return started
}
