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
 * ledger never fails a turn: a failure is logged once.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Clock from "effect/Clock"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { Brain, type BrainService, type MessagesRequest, type MessagesResponse, systemText } from "../Brain.js"
import { BrainLabelConfig } from "../brain/BrainChoice.js"
import { COMPACTION_SYSTEM } from "../Prompt.js"
import { endsWithNewline, splitLines } from "./HistoryFile.js"
import { Memory } from "./Memory.js"
import * as SafeFile from "./SafeFile.js"

export const FILE_NAME = "usage.jsonl"

export const UsageLine = Schema.Struct({
  /** When the answer arrived, ISO 8601 UTC. */
  at: Schema.String,
  kind: Schema.Literal("turn", "compaction"),
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

/** Appends lines whole; after a torn last line (a crash mid-write), on a line of their own. */
export const append = (file: string, lines: ReadonlyArray<UsageLine>): Either.Either<void, SafeFile.MemoryFileError> =>
  SafeFile.withFile(file, SafeFile.flags.append, (fd) =>
    Either.flatMap(
      Either.try({ try: () => ({ whole: endsWithNewline(fd), size: fs.fstatSync(fd).size }), catch: (e) => SafeFile.failed(file, e) }),
      ({ size, whole }) => {
        const text = lines.map((line) => `${JSON.stringify(line)}\n`).join("")
        return SafeFile.appendAll(fd, file, Buffer.from(whole ? text : `\n${text}`, "utf8"), size)
      }
    ))

const decodeLine = Schema.decodeUnknownOption(Schema.parseJson(UsageLine))

/** Every whole, well-formed line of the ledger; torn or foreign lines are skipped and counted. */
export const read = (file: string): Either.Either<{ readonly lines: Array<UsageLine>; readonly skipped: number }, SafeFile.MemoryFileError> =>
  Either.map(SafeFile.read(file), (text) => {
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

/** `brain` with every answer recorded in `file`; a failed write is logged once and never fails the call. */
export const recording = (brain: BrainService, file: string, label: string): Effect.Effect<BrainService> =>
  Effect.map(Ref.make(false), (warned) => ({
    complete: (request) =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const response = yield* brain.complete(request)
        const ended = yield* Clock.currentTimeMillis
        const written = append(file, [lineOf(request, response, label, started, ended)])
        if (Either.isLeft(written) && !(yield* Ref.getAndSet(warned, true))) {
          yield* Effect.logWarning(`usage ledger not written (${written.left.message}); turns go on without it`)
        }
        return response
      })
  }))

/**
 * The Brain, recording into the memory directory's ledger: provide it the
 * bridge's Brain and the Memory, and it provides the Brain the agent and
 * the compactor use.
 */
export const layer: Layer.Layer<Brain, ConfigError.ConfigError, Brain | Memory> = Layer.effect(
  Brain,
  Effect.gen(function*() {
    const memory = yield* Memory
    const label = yield* BrainLabelConfig
    return yield* recording(yield* Brain, path.join(memory.directory, FILE_NAME), label)
  })
)
