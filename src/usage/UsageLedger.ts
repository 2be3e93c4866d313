/**
 * The usage ledger: one line in `usage.jsonl` (memory directory) per brain
 * answer, with its token counts, model, brain, time taken and kind (a turn
 * or a compaction). It is written by a Brain decorator in the process that
 * holds the memory, so every answer is counted once, whichever brain bridge
 * gave it. A compaction is known by its system prompt (COMPACTION_SYSTEM).
 *
 * Crash-safe like history: a line is appended whole or cut back
 * (SafeFile.appendAll); a line torn by a crash is left as it is, the next
 * one starts on a line of its own, and the reader skips it. Writing the
 * ledger never fails a turn: a failure is logged once until a write works again.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Clock from "effect/Clock"
import type * as ConfigError from "effect/Config"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Brain, type BrainService, type MessagesRequest, type MessagesResponse, systemText, tapAnswers } from "../ports/Brain.js"
import { BrainLabelConfig } from "../config/BrainChoice.js"
import { madeOnFirstCall } from "../runtime/FirstCall.js"
import { COMPACTION_SYSTEM } from "../memory/CompactionPrompt.js"
import * as BackwardLines from "../memory/BackwardLines.js"
import { endsWithNewline, splitLines } from "../memory/HistoryFile.js"
import { Memory } from "../memory/Memory.js"
import * as SafeFile from "../runtime/SafeFile.js"

export const FILE_NAME = "usage.jsonl"

export const UsageLine = Schema.Struct({
  /** When the answer arrived, ISO 8601 UTC. */
  at: Schema.String,
  kind: Schema.Literals(["turn", "compaction"]),
  brain: Schema.String,
  model: Schema.String,
  ms: Schema.Number,
  input: Schema.Number,
  output: Schema.Number,
  cache_write: Schema.Number,
  cache_read: Schema.Number
})
export type UsageLine = typeof UsageLine.Type

const count = (value: number | null | undefined): number => value ?? 0

/** The ledger line for one answer. */
export const lineOf = (
  request: MessagesRequest,
  response: MessagesResponse,
  brain: string,
  startedMillis: number,
  endedMillis: number
): UsageLine => ({
  at: new Date(endedMillis).toISOString(),
  kind: systemText(request.system) === COMPACTION_SYSTEM ? "compaction" : "turn",
  brain,
  model: response.model ?? request.model,
  ms: endedMillis - startedMillis,
  input: count(response.usage?.input_tokens),
  output: count(response.usage?.output_tokens),
  cache_write: count(response.usage?.cache_creation_input_tokens),
  cache_read: count(response.usage?.cache_read_input_tokens)
})

const encode = (lines: ReadonlyArray<UsageLine>): string => lines.map((line) => `${JSON.stringify(line)}\n`).join("")

/**
 * An appender that holds the ledger open between answers, as history's is:
 * one `statx` of the path (a file replaced or removed by hand is opened
 * anew) and one `write` per answer; the last byte is read only when the
 * file is not where our own last line left it. `close` releases it.
 */
export const heldAppender = (file: string) => {
  let held: { readonly fd: number; readonly ino: number; end: number } | undefined
  const close = () => {
    const fd = held?.fd
    held = undefined
    if (fd !== undefined) Result.try(() => fs.closeSync(fd))
  }
  const append = (lines: ReadonlyArray<UsageLine>): Result.Result<void, SafeFile.MemoryFileError> => {
    // Nothing held (the agent's first answer since its start): opened, and sized by the open's own check.
    const stat = held === undefined ? undefined : Result.try(() => fs.lstatSync(file, { throwIfNoEntry: false }))
    // The size the open's own check read: a new file's first line needs no other fstat.
    let openedSize: number | undefined
    if (held === undefined || stat === undefined || Result.isFailure(stat) || stat.success?.ino !== held.ino) {
      close()
      const opened = SafeFile.openWithStat(file, SafeFile.flags.append)
      if (Result.isFailure(opened)) return Result.fail(opened.failure)
      held = { fd: opened.success.fd, ino: opened.success.stat.ino, end: -1 }
      openedSize = opened.success.stat.size
    }
    const current = held
    const sized = stat !== undefined && Result.isSuccess(stat) && stat.success !== undefined && stat.success.ino === current.ino
      ? Result.succeed(stat.success.size)
      : openedSize !== undefined
      ? Result.succeed(openedSize)
      : Result.try({ try: () => fs.fstatSync(current.fd).size, catch: (error) => SafeFile.failed(file, error) })
    if (Result.isFailure(sized)) return Result.fail(sized.failure)
    const size = sized.success
    // A line torn by a crash: the next one starts on a line of its own.
    const whole = size === 0 || size === current.end || Result.getOrElse(Result.try(() => endsWithNewline(current.fd, size)), () => true)
    const bytes = Buffer.from(whole ? encode(lines) : `\n${encode(lines)}`, "utf8")
    const written = SafeFile.appendAll(current.fd, file, bytes, size)
    current.end = Result.isSuccess(written) ? size + bytes.length : -1
    return written
  }
  return { append, close }
}

const decodeLine = madeOnFirstCall(() => Schema.decodeUnknownOption(Schema.fromJsonString(UsageLine)))

/** Every whole, well-formed line of the ledger; torn or foreign lines are skipped and counted. */
export const read = (file: string): Result.Result<{ readonly lines: Array<UsageLine>; readonly skipped: number }, SafeFile.MemoryFileError> =>
  Result.map(SafeFile.read(file), (text) => {
    const lines: Array<UsageLine> = []
    let skipped = 0
    for (const raw of splitLines(text ?? "")) {
      if (raw.trim() === "") continue
      const line = decodeLine(raw)
      if (Option.isSome(line)) lines.push(line.value)
      else skipped++
    }
    return { lines, skipped }
  })

/**
 * `brain` with every answer recorded in `file`; a failed write never fails the call, and is logged once until one works again.
 * The ledger stays open between answers; `closeFile` closes it (the next answer opens it again): `serve`
 * closes it with an agent's other files when the agent is no longer among those keeping theirs open
 * (OpenFiles). The scope closes it for good.
 */
export const recorder = (
  brain: BrainService,
  file: string,
  label: string
): Effect.Effect<{ readonly brain: BrainService; readonly closeFile: Effect.Effect<void> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    let warned = false
    const ledger = yield* Effect.acquireRelease(Effect.sync(() => heldAppender(file)), (held) => Effect.sync(held.close))
    // Plain steps, not a generator: this wraps every brain call, whole or streamed (tapAnswers).
    const recorded = tapAnswers(brain, (request, started, response) =>
      Effect.flatMap(Clock.currentTimeMillis, (ended) => {
        const written = ledger.append([lineOf(request, response, label, started, ended)])
        // Once per outage, not once per process: a later one (months on) is said too, and its end.
        if (Result.isSuccess(written)) {
          if (!warned) return Effect.void
          warned = false
          return Effect.logInfo(`usage ledger ${file} is written again`)
        }
        if (warned) return Effect.void
        warned = true
        return Effect.logWarning(`usage ledger not written (${written.failure.message}); turns go on without it (logged once until it is written again)`)
      }))
    return { brain: recorded, closeFile: Effect.sync(ledger.close) }
  })

/** `recorder`'s brain alone: the ledger held open until the scope closes. */
export const recording = (brain: BrainService, file: string, label: string): Effect.Effect<BrainService, never, Scope.Scope> =>
  Effect.map(recorder(brain, file, label), (recorded) => recorded.brain)

/**
 * The Brain, recording into the memory directory's ledger: provide it the
 * bridge's Brain and the Memory, and it provides the Brain the agent and
 * the compactor use. The ledger's descriptor is closed with the layer.
 */
export const layer: Layer.Layer<Brain, ConfigError.ConfigError, Brain | Memory> = Layer.effect(
  Brain,
  Effect.gen(function*() {
    const memory = yield* Memory
    const label = yield* BrainLabelConfig
    return yield* recording(yield* Brain, path.join(memory.directory, FILE_NAME), label)
  })
)

/** The lines of the open ledger `fd` from day `since` on, read backwards from its end to the first line of an earlier day. */
const linesFromDay = (fd: number, since: string): { readonly lines: Array<UsageLine>; readonly skipped: number } => {
  const lines: Array<UsageLine> = []
  let skipped = 0
  BackwardLines.visitBackward(fd, BackwardLines.sizeOf(fd), ({ line }) => {
    const decoded = decodeLine(line)
    if (Option.isNone(decoded)) {
      skipped++
      return true
    }
    if (decoded.value.at.slice(0, 10) < since) return false
    lines.push(decoded.value)
    return true
  })
  return { lines: lines.reverse(), skipped }
}

/**
 * The lines of the ledger from day `since` (YYYY-MM-DD, UTC) on, read
 * backwards from the end (the ledger is appended in time order): today's
 * usage of an agent costs the same with a year of lines before it.
 */
export const readSinceDay = (file: string, since: string): Array<UsageLine> => {
  const opened = Result.try(() => fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW))
  if (Result.isFailure(opened)) return []
  const read = Result.try(() => linesFromDay(opened.success, since).lines)
  Result.try(() => fs.closeSync(opened.success))
  return Result.getOrElse(read, () => [])
}

/**
 * `read` of the lines from day `since` on only, as `readSinceDay` reads them (refused as `read` refuses a
 * file): a period's usage costs its own lines, not the months of ledger before it, which read whole held
 * every other agent's turn (seconds for a busy agent's year) and past 512 MiB could not be read at all.
 * `skipped` counts the lines that could not be read among those.
 */
export const readFromDay = (
  file: string,
  since: string
): Result.Result<{ readonly lines: Array<UsageLine>; readonly skipped: number }, SafeFile.MemoryFileError> =>
  SafeFile.withFileIfPresent(file, SafeFile.flags.read, { lines: [], skipped: 0 }, (fd) => Result.succeed(linesFromDay(fd, since)))
