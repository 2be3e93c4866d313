/**
 * The spawn helper's program (see SpawnHelper.ts): `node SpawnHelperMain.js`
 * with pipes on its stdin and stdout. It runs each request it reads with
 * ChildProcess.run, so each command runs in a group of its own, listed with
 * this process's watchdog, and it answers each request on stdout.
 *
 * End of file on stdin means the agent has ended, however it ended: every
 * group still running is killed and reaped, then the helper exits. A line
 * it cannot read is a bug in this package: it says so on stderr and exits,
 * killing what it runs, and the agent reports that to the runs it waits for.
 *
 * This is the main of a process of its own: its module state (the runs it
 * holds, whether it is ending, its watchdog's scope) is that process's,
 * which ends with it.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import { errnoCode } from "../Errors.js"
import * as Framing from "../Framing.js"
import * as ChildProcess from "./ChildProcess.js"
import * as Watchdog from "./Watchdog.js"
import { decodeToHelper, type FromHelper, maxLineBytes, type RunLine } from "./SpawnWire.js"

interface Running {
  readonly fiber: Fiber.Fiber<ChildProcess.RunOutcome, ChildProcess.SpawnError>
  readonly warnings: ReadonlyArray<string>
}
const running = new Map<number, Running>()

// This process's watchdog, for every group it starts: its scope ends when the process does (`end`).
const watchdogScope = Scope.makeUnsafe()
const watchdog = Effect.runSync(Scope.provide(Watchdog.make, watchdogScope))

// The agent is gone when its end of the pipe is: end of file on stdin says so, an EPIPE here adds nothing.
process.stdout.on("error", () => undefined)
const answer = (line: FromHelper): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`)
}

/** What a run logged at warning or above, for its answer: the agent logs it (this process's stdout is the wire). */
const collectWarnings = (warnings: Array<string>) =>
  Logger.make<unknown, void>(({ logLevel, message }) => {
    if (!LogLevel.isGreaterThanOrEqualTo(logLevel, "Warn")) return
    warnings.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
  })

const withWarnings = (warnings: ReadonlyArray<string>) => warnings.length === 0 ? {} : { warnings: [...warnings] }

const outcomeLine = (id: number, outcome: ChildProcess.RunOutcome, warnings: ReadonlyArray<string>): FromHelper => ({
  ...withWarnings(warnings),
  _tag: "Done",
  id,
  stdout: Buffer.from(outcome.stdout).toString("base64"),
  stdoutTruncated: outcome.stdoutTruncated,
  stderr: Buffer.from(outcome.stderr).toString("base64"),
  stderrTruncated: outcome.stderrTruncated,
  exitCode: outcome.exitCode,
  signal: outcome.signal,
  flooded: outcome.flooded
})

const start = (request: typeof RunLine.Type): void => {
  const warnings: Array<string> = []
  // Effect's default logger writes to stdout, which is the wire here: the run's logs go with its answer instead.
  const fiber = Effect.runFork(
    ChildProcess.run(request).pipe(
      Effect.provideService(Watchdog.Watchdog, watchdog),
      Effect.provideService(References.CurrentLoggers, new Set([collectWarnings(warnings)]))
    )
  )
  running.set(request.id, { fiber, warnings })
  fiber.addObserver((exit) => {
    running.delete(request.id)
    // A stopped run is answered by its Stop, once the group is reaped.
    if (Exit.hasInterrupts(exit)) return
    answer(Exit.match(exit, {
      onSuccess: (outcome) => outcomeLine(request.id, outcome, warnings),
      onFailure: (cause): FromHelper => {
        const failure = Cause.findErrorOption(cause)
        if (failure._tag === "None") return { _tag: "Failed", id: request.id, message: Cause.pretty(cause), ...withWarnings(warnings) }
        const code = errnoCode(failure.value.cause)
        return {
          _tag: "Failed",
          id: request.id,
          message: failure.value.message,
          ...(code === undefined ? {} : { code }),
          ...withWarnings(warnings)
        }
      }
    }))
  })
}

const stop = (id: number): void => {
  const run = running.get(id)
  if (run === undefined) return answer({ _tag: "Stopped", id })
  // Its warnings are read once it is reaped: the working directory's removal comes last.
  Effect.runFork(Fiber.interrupt(run.fiber)).addObserver(() => answer({ _tag: "Stopped", id, ...withWarnings(run.warnings) }))
}

let ending = false
const end = (code: number): void => {
  if (ending) return
  ending = true
  Effect.runFork(
    Fiber.interruptAll([...running.values()].map((run) => run.fiber)).pipe(Effect.andThen(Scope.close(watchdogScope, Exit.void)))
  ).addObserver(() => process.exit(code))
}

const lines = Framing.makeLineFramer(maxLineBytes)
process.stdin.on("data", (chunk: Buffer) => {
  for (const frame of lines.push(chunk)) {
    if (ending) return
    const request = Result.flatMap(frame, (line) => decodeToHelper(line))
    if (Result.isFailure(request)) {
      process.stderr.write(`planckclaw spawn helper: a request it cannot read (${request.failure.message.slice(0, 500)})\n`)
      return end(70)
    }
    if (request.success._tag === "Run") start(request.success)
    else stop(request.success.id)
  }
})
process.stdin.on("end", () => end(0))
process.stdin.on("error", () => end(0))
