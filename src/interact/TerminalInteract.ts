/**
 * The terminal interact adapter (the Interact port on stdin/stdout): channel
 * `cli`. Replies go to stdout: that is its job, not logging. Interactive on a TTY (prompt
 * `planckclaw> `); otherwise one message per input line, every one answered
 * in order, and the stream ends with the input so a script can pipe into it.
 */
import * as readline from "node:readline"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { Interact, InteractError, type InteractService, sanitize } from "../Interact.js"
import { stripControlSequences } from "./TerminalText.js"

export const CHANNEL = "cli"
export const PROMPT = "planckclaw> "
/** One piped line may hold this much; a longer one is skipped with a warning rather than buffered. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024
/** Piped input is not read on while this many bytes of lines wait to be taken. */
const MAX_WAITING_BYTES = 16 * 1024 * 1024

export interface TerminalStreams {
  readonly input: NodeJS.ReadableStream
  readonly output: NodeJS.WritableStream
  /** Interactive mode: prompt, line editing, Ctrl-C ends the run. */
  readonly interactive: boolean
  /** The output is a terminal: control sequences in replies are removed. Defaults to `interactive`. */
  readonly outputIsTerminal?: boolean
}

/** What the input side hands over, in order. */
type Received =
  | { readonly _tag: "Line"; readonly text: string; readonly bytes: number }
  | { readonly _tag: "Oversized"; readonly lineNumber: number; readonly bytes: number }
  | { readonly _tag: "Failed"; readonly error: InteractError }
  | { readonly _tag: "End" }

const END: Received = { _tag: "End" }

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

/**
 * Interactive input through readline: line editing and the prompt. Returns
 * how to show the prompt and how to stop reading.
 */
const readInteractive = (streams: TerminalStreams, offer: (received: Received) => void) => {
  const lines = readline.createInterface({
    input: streams.input,
    output: streams.output,
    prompt: PROMPT,
    terminal: true,
    crlfDelay: Infinity
  })
  lines.on("line", (line) => offer({ _tag: "Line", text: line, bytes: 0 }))
  lines.on("close", () => offer(END))
  // In raw mode Ctrl-C reaches readline instead of the process: hand it
  // back as the signal, so the runtime tears everything down as usual.
  lines.on("SIGINT", () => process.kill(process.pid, "SIGINT"))
  return { prompt: () => lines.prompt(), close: () => lines.close() }
}

/**
 * Piped input split on LF only (readline would also end a line at a lone
 * CR, cutting one message in two); the CR of a CR LF goes. Bytes are
 * decoded per line, so a character split across reads stays whole and
 * invalid UTF-8 becomes U+FFFD.
 */
const readPiped = (input: NodeJS.ReadableStream, offer: (received: Received) => void) => {
  let parts: Array<Buffer> = []
  let bytes = 0
  let lineNumber = 0
  const take = (piece: Buffer) => {
    bytes += piece.length
    // Past the cap the line is only counted, so memory stays bounded.
    if (bytes > MAX_LINE_BYTES) parts = []
    else if (piece.length > 0) parts.push(piece)
  }
  const endLine = () => {
    lineNumber++
    if (bytes > MAX_LINE_BYTES) {
      offer({ _tag: "Oversized", lineNumber, bytes })
    } else {
      const line = Buffer.concat(parts, bytes)
      const text = line.subarray(0, line.at(-1) === 0x0d ? -1 : undefined).toString("utf8")
      offer({ _tag: "Line", text, bytes })
    }
    parts = []
    bytes = 0
  }
  const onData = (chunk: Buffer | string) => {
    const data = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk
    let start = 0
    for (let newline = data.indexOf(0x0a); newline !== -1; newline = data.indexOf(0x0a, start)) {
      take(data.subarray(start, newline))
      endLine()
      start = newline + 1
    }
    take(data.subarray(start))
  }
  const onEnd = () => {
    // A last line without LF is still a message.
    if (bytes > 0) endLine()
    offer(END)
  }
  const onError = (error: Error) =>
    offer({
      _tag: "Failed",
      error: new InteractError({ message: `cannot read standard input: ${error.message}`, cause: error })
    })
  input.on("data", onData)
  input.on("end", onEnd)
  input.on("close", onEnd)
  input.on("error", onError)
  return {
    close: () => {
      input.removeListener("data", onData)
      input.removeListener("end", onEnd)
      input.removeListener("close", onEnd)
      input.removeListener("error", onError)
      input.pause()
    }
  }
}

export const make = (streams: TerminalStreams) =>
  Effect.gen(function*() {
    const stripReplies = streams.outputIsTerminal ?? streams.interactive
    // Lines are queued from the moment the terminal is opened: piped input
    // can be read before anyone pulls the stream, and must not be lost.
    const queue = yield* Queue.unbounded<Received>()
    let waitingBytes = 0
    const offer = (received: Received) => {
      if (received._tag === "Line") {
        waitingBytes += received.bytes
        if (waitingBytes > MAX_WAITING_BYTES) streams.input.pause()
      }
      Queue.unsafeOffer(queue, received)
    }
    const taken = (received: Received) =>
      Effect.sync(() => {
        if (received._tag !== "Line" || received.bytes === 0) return
        waitingBytes -= received.bytes
        if (waitingBytes <= MAX_WAITING_BYTES && streams.input.isPaused()) streams.input.resume()
      })

    const reader = yield* Effect.acquireRelease(
      Effect.sync(() =>
        streams.interactive
          ? readInteractive(streams, offer)
          : { prompt: () => undefined, ...readPiped(streams.input, offer) }
      ),
      (reader) => Effect.sync(() => reader.close())
    )
    const prompt = Effect.sync(() => reader.prompt())
    yield* prompt

    const messages = Stream.fromQueue(queue, { maxChunkSize: 1 }).pipe(
      Stream.tap(taken),
      Stream.takeWhile((received) => received._tag !== "End"),
      Stream.mapEffect((received): Effect.Effect<Option.Option<string>, InteractError> => {
        switch (received._tag) {
          case "Failed":
            return Effect.fail(received.error)
          case "Oversized":
            return Effect.logWarning(
              `input line ${received.lineNumber} is ${received.bytes} bytes, over the ${MAX_LINE_BYTES}-byte ` +
                "limit for one line: it was skipped, send it in smaller parts"
            ).pipe(Effect.as(Option.none()))
          case "Line":
            // The agent does not answer blank lines: do not send them and wait for a reply.
            return Option.isSome(sanitize(received.text))
              ? Effect.succeed(Option.some(received.text))
              : prompt.pipe(Effect.as(Option.none()))
        }
      }),
      Stream.filterMap(identity),
      Stream.map((text) => ({ channel: CHANNEL, text }))
    )

    const service: InteractService = {
      messages,
      send: (message) =>
        write(streams.output, `${stripReplies ? stripControlSequences(message.text) : message.text}\n`).pipe(
          Effect.zipRight(prompt)
        )
    }
    return service
  })

export const layer: Layer.Layer<Interact> = Layer.scoped(
  Interact,
  make({
    input: process.stdin,
    output: process.stdout,
    interactive: process.stdin.isTTY === true,
    outputIsTerminal: process.stdout.isTTY === true
  })
)
