/**
 * The terminal interact adapter (the Interact port on stdin/stdout): channel
 * `cli`. Replies go to stdout: that is its job, not logging. Interactive on
 * a TTY: a hint and the prompt `planckclaw> `, lines pasted at once or
 * joined by a trailing `\` are one message, and a spinner runs while the
 * agent works. Otherwise one message per input line, every one answered in
 * order, and the stream ends with the input so a script can pipe into it.
 * Either way `/quit` ends the session as the end of input does; every other
 * slash command is the agent's (Commands.ts).
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as Commands from "../agent/SlashCommands.js"
import { cancelFor, type InboundMessage, Interact, InteractError, type InteractService, isBlank } from "../ports/Interact.js"
import { AgentReady } from "./AgentReady.js"
import { ToolLines } from "./ToolLines.js"
import * as CtrlC from "./CtrlC.js"
import * as Spinner from "./Spinner.js"
import { MAX_LINE_BYTES, readInteractive, readPiped, type Received } from "./TerminalInput.js"
import { type TerminalStreams, write } from "./TerminalStreams.js"
import { stripControlSequences } from "./TerminalText.js"
import { CHANNEL, CONTINUATION, FORGET_QUESTION, HINT, isQuit, QUIT_HELP } from "./TerminalWords.js"
import * as TurnProgress from "./TurnProgress.js"

export { MAX_LINE_BYTES, PROMPT, SHOW_CURSOR } from "./TerminalInput.js"
export type { TerminalStreams } from "./TerminalStreams.js"
export { CHANNEL, CONTINUATION, FORGET_QUESTION, HINT, QUIT_HELP } from "./TerminalWords.js"

/**
 * Lines arriving this close together are one pasted message; a person
 * typing never presses Enter twice this fast.
 */
export const PASTE_WINDOW = Duration.millis(30)
/** Piped input is not read on while this many bytes of lines wait to be taken. */
const MAX_WAITING_BYTES = 16 * 1024 * 1024

export const make = (streams: TerminalStreams) =>
  Effect.gen(function*() {
    const stripReplies = streams.outputIsTerminal ?? streams.interactive
    // Lines are queued from the moment the terminal is opened: piped input
    // can be read before anyone pulls the stream, and must not be lost.
    const queue = yield* Queue.unbounded<Received>()
    // Opened by every arrival: waiting on it, unlike on a take, can be cut short without losing a line.
    const arrived = yield* Latch.make(false)
    let waitingBytes = 0
    const offer = (received: Received) => {
      if (received._tag === "Line") {
        waitingBytes += received.bytes
        if (waitingBytes > MAX_WAITING_BYTES) streams.input.pause()
      }
      Queue.offerUnsafe(queue, received)
      arrived.openUnsafe()
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
          : {
            prompt: (_shown?: string) => undefined,
            newLine: () => undefined,
            interject: (text: string) => void streams.output.write(text),
            ...readPiped(streams.input, offer)
          }
      ),
      (reader) => Effect.sync(() => reader.close())
    )
    const prompt = Effect.sync(() => reader.prompt())
    // Only where a person watches the output: never into a pipe or a file.
    const spinner = streams.interactive && stripReplies
      ? Option.some(yield* Spinner.make((text) => void streams.output.write(text)))
      : Option.none()
    const greet = Effect.andThen(Effect.sync(() => {
      if (streams.interactive) streams.output.write(`${HINT}\n`)
    }), prompt)
    if (streams.ready === undefined) yield* greet
    else yield* Effect.forkScoped(Effect.andThen(streams.ready, greet))

    // A line taken while looking for more of a message, which belongs to the next one.
    let held: Received | undefined
    const next = Effect.suspend(() => {
      const line = held
      held = undefined
      return line !== undefined ? Effect.succeed(line) : Effect.tap(Queue.take(queue), taken)
    })
    /** The next line if one arrives within `window`; nothing is taken when none does. */
    const nextWithin = (window: Duration.Duration): Effect.Effect<Option.Option<Received>> =>
      held !== undefined ? Effect.map(next, Option.some) : Effect.gen(function*() {
        arrived.closeUnsafe()
        let polled = yield* Queue.poll(queue)
        if (Option.isNone(polled)) {
          yield* Effect.timeoutOption(arrived.await, window)
          polled = yield* Queue.poll(queue)
        }
        if (Option.isSome(polled)) yield* taken(polled.value)
        return polled
      })

    /**
     * The message a first line starts: lines pasted with it, and lines a
     * trailing `\` continues; none when a Ctrl-C drops the unfinished message.
     */
    const gather = (first: string): Effect.Effect<Option.Option<string>> =>
      Effect.gen(function*() {
        const lines = [first]
        while (true) {
          const last = lines[lines.length - 1]!
          const continued = last.endsWith("\\")
          if (continued) {
            lines[lines.length - 1] = last.slice(0, -1)
            if (held === undefined) reader.prompt(CONTINUATION)
          }
          const more = continued ? Option.some(yield* next) : yield* nextWithin(PASTE_WINDOW)
          if (Option.isNone(more)) break
          if (continued && more.value._tag === "Interrupt") {
            yield* interrupted
            return Option.none()
          }
          if (more.value._tag !== "Line") {
            held = more.value
            break
          }
          lines.push(more.value.text)
        }
        return Option.some(lines.join("\n"))
      })

    // The agent described what /forget archives: the next line answers y/N (interactive only).
    let confirmingForget = false
    const answerForget = (text: string): Effect.Effect<Option.Option<string>> => {
      confirmingForget = false
      if (/^\s*y(es)?\s*$/i.test(text)) return Effect.succeed(Option.some("/forget confirm"))
      // Another command instead of an answer: nothing forgotten, and the command goes on as typed.
      if (Option.isSome(Commands.parse(text))) return Effect.succeed(Option.some(text))
      return write(streams.output, "Nothing was forgotten.\n").pipe(Effect.ignore, Effect.andThen(prompt), Effect.as(Option.none()))
    }

    // Messages sent and not answered yet: a Ctrl-C meanwhile cancels them.
    let awaiting = 0
    const ctrlC = CtrlC.make()
    /** A Ctrl-C's `^C`, ending the line it was pressed on. */
    const interrupted = Effect.sync(() => {
      reader.newLine()
      streams.output.write(`${CtrlC.ECHO}\n`)
    })

    // None: nothing to send for this input. Cause.Done: the stream ends (end of input, /quit, Ctrl-C twice).
    const pull: Effect.Effect<Option.Option<InboundMessage>, InteractError | Cause.Done> = Effect.gen(function*() {
      const received = yield* next
      switch (received._tag) {
        case "End":
          return yield* Cause.done()
        case "Interrupt": {
          const action = yield* ctrlC({ cleared: received.cleared, busy: awaiting > 0 })
          if (action === "cleared") return Option.none()
          // The spinner runs on until the agent's replies say each message was cancelled.
          if (action === "cancel") return Option.some(cancelFor(CHANNEL))
          yield* interrupted
          if (action === "leave") return yield* Cause.done()
          if (confirmingForget) {
            confirmingForget = false
            yield* write(streams.output, "Nothing was forgotten.\n").pipe(Effect.ignore)
          } else {
            yield* write(streams.output, `${CtrlC.LEAVE_HINT}\n`).pipe(Effect.ignore)
          }
          yield* prompt
          return Option.none()
        }
        case "Failed":
          return yield* Effect.fail(received.error)
        case "Oversized":
          yield* Effect.logWarning(
            `input line ${received.lineNumber} is ${received.bytes} bytes, over the ${MAX_LINE_BYTES}-byte ` +
              "limit for one line: it was skipped, send it in smaller parts"
          )
          return Option.none()
        case "Line": {
          const whole = streams.interactive ? yield* gather(received.text) : Option.some(received.text)
          if (Option.isNone(whole)) {
            yield* prompt
            return Option.none()
          }
          const gathered = whole.value
          if (isQuit(gathered)) return yield* Cause.done()
          const answered = confirmingForget ? yield* answerForget(gathered) : Option.some(gathered)
          if (Option.isNone(answered)) return Option.none()
          const text = answered.value
          // The agent does not answer blank lines: do not send them and wait for a reply.
          if (isBlank(text)) {
            yield* prompt
            return Option.none()
          }
          if (Option.isSome(spinner)) yield* spinner.value.waiting
          awaiting++
          return Option.some({ channel: CHANNEL, text })
        }
      }
    })

    const messages = Stream.fromEffectRepeat(pull).pipe(
      Stream.filterMap((message: Option.Option<InboundMessage>) => Option.isSome(message) ? Result.succeed(message.value) : Result.failVoid)
    )

    // The agent's /help, with the terminal's own command in it.
    const withQuit = (text: string) => text === Commands.HELP ? Commands.helpText([QUIT_HELP]) : text

    // On a terminal the agent's "send /forget confirm" becomes a y/N question.
    const asksToForget = (text: string) => streams.interactive && text.endsWith(Commands.FORGET_ASK)

    // Where a person watches the output, the turn shows as it goes; piped output gets the reply alone.
    const progress = stripReplies ? Option.some(TurnProgress.make((text) => void streams.output.write(text))) : Option.none()
    const toolLog = streams.toolLines === undefined
      ? undefined
      : TurnProgress.makeToolLog((line) => void streams.toolLines?.write(line))
    const event: InteractService["event"] = (_channel, turnEvent) =>
      Option.match(progress, {
        onNone: () => Effect.sync(() => toolLog?.(turnEvent)),
        onSome: (shown) =>
          Effect.andThen(
            Option.isSome(spinner) && !shown.started() ? spinner.value.quiet : Effect.void,
            Effect.sync(() => shown.show(turnEvent))
          )
      })

    const service: InteractService = {
      messages,
      ...(Option.isSome(progress) || toolLog !== undefined ? { event } : {}),
      send: (message) =>
        Effect.gen(function*() {
          const asking = asksToForget(message.text)
          const text = asking ? message.text.slice(0, -Commands.FORGET_ASK.length).trimEnd() : withQuit(message.text)
          const clean = stripReplies ? stripControlSequences(text) : text
          // A reply to nothing asked (a scheduled message's): shown above the prompt, which stays as it was.
          if (awaiting === 0 && streams.interactive && !asking) return yield* Effect.sync(() => reader.interject(`${clean}\n`))
          awaiting = Math.max(0, awaiting - 1)
          const more = Option.isSome(spinner) ? yield* spinner.value.answered : false
          yield* write(streams.output, Option.isSome(progress) ? progress.value.finish(clean) : `${clean}\n`)
          if (Option.isSome(spinner)) yield* spinner.value.resume
          if (asking && !more) {
            confirmingForget = true
            reader.prompt(FORGET_QUESTION)
            // While other messages wait, their spinner stands where the prompt would.
          } else if (!more) yield* prompt
        })
    }
    return service
  })

/**
 * On this process's standard input and output; in a run, the first prompt
 * waits for its AgentReady, and tool lines go where its ToolLines says.
 */
export const layer: Layer.Layer<Interact> = Layer.effect(
  Interact,
  Effect.flatMap(Effect.all([Effect.serviceOption(AgentReady), Effect.serviceOption(ToolLines)]), ([ready, toolLines]) =>
    make({
      input: process.stdin,
      output: process.stdout,
      interactive: process.stdin.isTTY === true,
      outputIsTerminal: process.stdout.isTTY === true,
      ...Option.match(ready, { onNone: () => ({}), onSome: (signal) => ({ ready: Deferred.await(signal) }) }),
      ...Option.match(toolLines, { onNone: () => ({}), onSome: (stream) => ({ toolLines: stream }) })
    }))
)
