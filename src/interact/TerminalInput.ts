/**
 * What the terminal bridge reads, as it hands it over: lines, lines too long
 * to keep, a read failure, a Ctrl-C, the end. Piped input is split here;
 * interactive input goes through readline.
 */
import * as readline from "node:readline"
import { InteractError } from "../ports/Interact.js"

export const PROMPT = "planckclaw> "
/** Written as the terminal is given back, whatever hid the cursor. */
export const SHOW_CURSOR = "\u001b[?25h"

/** One piped line may hold this much; a longer one is skipped with a warning rather than buffered. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

/** What the input side hands over, in order. */
export type Received =
  | { readonly _tag: "Line"; readonly text: string; readonly bytes: number }
  | { readonly _tag: "Oversized"; readonly lineNumber: number; readonly bytes: number }
  | { readonly _tag: "Failed"; readonly error: InteractError }
  /** Ctrl-C on an interactive terminal; `cleared`: it emptied a half-typed line (see CtrlC.ts). */
  | { readonly _tag: "Interrupt"; readonly cleared: boolean }
  | { readonly _tag: "End" }

export const END: Received = { _tag: "End" }

/**
 * Piped input split on LF only (readline would also end a line at a lone
 * CR, cutting one message in two); the CR of a CR LF goes. Bytes are
 * decoded per line, so a character split across reads stays whole and
 * invalid UTF-8 becomes U+FFFD.
 */
export const readPiped = (input: NodeJS.ReadableStream, offer: (received: Received) => void) => {
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

/**
 * Interactive input through readline: line editing and the prompt. Returns
 * how to show the prompt and how to stop reading.
 */
export const readInteractive = (streams: { readonly input: NodeJS.ReadableStream; readonly output: NodeJS.WritableStream }, offer: (received: Received) => void) => {
  const lines = readline.createInterface({
    input: streams.input,
    output: streams.output,
    prompt: PROMPT,
    terminal: true,
    crlfDelay: Infinity
  })
  // Whether the cursor stands after a prompt (and what is typed there), not at the start of a line.
  let prompted = false
  // Once readline has closed (Ctrl-D, even while a turn runs) it throws on every prompt: the replies
  // still owed are printed plainly, and nothing is asked any more.
  let closed = false
  lines.on("line", (line) => {
    prompted = false
    offer({ _tag: "Line", text: line, bytes: 0 })
  })
  lines.on("close", () => {
    closed = true
    offer(END)
  })
  // In raw mode Ctrl-C reaches readline instead of the process: a half-typed
  // line is emptied here, where readline's buffer is; the rest is CtrlC.ts's.
  lines.on("SIGINT", () => {
    const cleared = lines.line.length > 0
    if (cleared) {
      lines.write(null, { ctrl: true, name: "e" })
      lines.write(null, { ctrl: true, name: "u" })
    }
    offer({ _tag: "Interrupt", cleared })
  })
  return {
    prompt: (shown: string = PROMPT) => {
      if (closed) return
      prompted = true
      lines.setPrompt(shown)
      lines.prompt()
    },
    /** The text written next starts a line of its own. */
    newLine: () => {
      prompted = false
    },
    /**
     * `text` shown while nothing was asked (a scheduled message's reply):
     * above the prompt, which is drawn again below it with what is typed
     * there and the cursor where it was.
     */
    interject: (text: string) => {
      if (closed) {
        // Ctrl-D at the prompt: the text starts a line of its own, with no prompt drawn again under it.
        streams.output.write(`${prompted ? "\n" : ""}${text}`)
        prompted = false
        return
      }
      if (!prompted) return void streams.output.write(text)
      readline.cursorTo(streams.output, 0)
      readline.clearScreenDown(streams.output)
      streams.output.write(text)
      lines.prompt(true)
    },
    // The shell's prompt must not be glued to ours: the line is ended, and the cursor shown.
    close: () => {
      lines.close()
      streams.output.write(`${prompted ? "\n" : ""}${SHOW_CURSOR}`)
      prompted = false
    }
  }
}
