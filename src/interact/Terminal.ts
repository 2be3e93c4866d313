/**
 * The terminal bridge: channel `cli`. Interactive on a TTY (prompt
 * `planckclaw> `); otherwise one message per input line, every one answered
 * in order, and the stream ends with the input so a script can pipe into it.
 */
import * as readline from "node:readline"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { Interact, InteractError, type InteractService, sanitize } from "../Interact.js"

export const CHANNEL = "cli"
export const PROMPT = "planckclaw> "

export interface TerminalStreams {
  readonly input: NodeJS.ReadableStream
  readonly output: NodeJS.WritableStream
  /** Interactive mode: prompt, line editing, Ctrl-C ends the run. */
  readonly interactive: boolean
}

const write = (output: NodeJS.WritableStream, text: string) =>
  Effect.async<void, InteractError>((resume) => {
    output.write(text, (error) =>
      resume(
        error === null || error === undefined
          ? Effect.void
          : Effect.fail(new InteractError({ message: `cannot write to the terminal: ${error.message}`, cause: error }))
      )
    )
  })

export const make = (streams: TerminalStreams) =>
  Effect.gen(function*() {
    const lines = yield* Effect.acquireRelease(
      Effect.sync(() =>
        readline.createInterface({
          input: streams.input,
          ...(streams.interactive ? { output: streams.output, prompt: PROMPT, terminal: true } : { terminal: false }),
          crlfDelay: Infinity
        })
      ),
      (rl) => Effect.sync(() => rl.close())
    )
    const prompt = Effect.sync(() => {
      if (streams.interactive) lines.prompt()
    })

    // Lines are queued from the moment the terminal is opened: piped input
    // can be read before anyone pulls the stream, and must not be lost.
    const lineQueue = yield* Queue.unbounded<Option.Option<string>>()
    lines.on("line", (line) => void Queue.unsafeOffer(lineQueue, Option.some(line)))
    lines.on("close", () => void Queue.unsafeOffer(lineQueue, Option.none()))
    // In raw mode Ctrl-C reaches readline instead of the process: hand it
    // back as the signal, so the runtime tears everything down as usual.
    lines.on("SIGINT", () => process.kill(process.pid, "SIGINT"))
    yield* prompt

    const messages = Stream.fromQueue(lineQueue, { maxChunkSize: 1 }).pipe(
      Stream.takeWhile(Option.isSome),
      Stream.map((line) => line.value),
      // The agent does not answer blank lines: do not send them and wait for a reply.
      Stream.filter((line) => {
        if (Option.isSome(sanitize(line))) return true
        if (streams.interactive) lines.prompt()
        return false
      }),
      Stream.map((text) => ({ channel: CHANNEL, text }))
    )

    const service: InteractService = {
      messages,
      send: (message) => write(streams.output, `${message.text}\n`).pipe(Effect.zipRight(prompt))
    }
    return service
  })

export const layer: Layer.Layer<Interact> = Layer.scoped(
  Interact,
  make({ input: process.stdin, output: process.stdout, interactive: process.stdin.isTTY === true })
)
