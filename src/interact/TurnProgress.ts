/**
 * A turn shown on the terminal as it goes: the model's text as it is
 * written, and one dim line per tool call (its name, a short form of its
 * input, its outcome, its milliseconds). The reply then comes whole; only
 * what was not shown yet of it is printed (whitespace the turn trimmed off
 * the text shown makes no difference). A reply that is not the text shown
 * (an apology, a cancel) is printed whole on a line of its own.
 */
import type { InteractEvent } from "../ports/Interact.js"
import { stripControlSequences } from "./TerminalText.js"

const DIM = "\u001b[2m"
const UNDIM = "\u001b[22m"
/** Longest short form of a tool's input, in characters. */
export const INPUT_SHOWN = 60

/** A tool's input in one short line: compact JSON, cut with `…`. */
export const shortInput = (input: unknown): string => {
  const json = JSON.stringify(input ?? null) ?? "null"
  const flat = stripControlSequences(json)
  return flat.length <= INPUT_SHOWN ? flat : `${flat.slice(0, INPUT_SHOWN - 1)}…`
}

/** The dim line of one tool call (`dim: false` where no terminal shows it: the verbose log). */
export const toolLine = (name: string, input: unknown, ok: boolean, ms: number, dim = true): string => {
  const text = `  ${stripControlSequences(name)} ${shortInput(input)} ${ok ? "ok" : "failed"} ${Math.round(ms)} ms`
  return dim ? `${DIM}${text}${UNDIM}\n` : `${text}\n`
}

export interface TurnProgress {
  /** Shows one event of the turn running. */
  readonly show: (event: InteractEvent) => void
  /** Whether anything of the turn running was shown. */
  readonly started: () => boolean
  /** What to print for the reply (its newline included), given what was shown of it; then starts afresh. */
  readonly finish: (reply: string) => string
}

/** Inputs of calls started and not answered yet, by tool name, in order: a result takes its call's. */
const makeCalls = () => {
  const calls = new Map<string, Array<unknown>>()
  return {
    start: (name: string, input: unknown) => void calls.set(name, [...(calls.get(name) ?? []), input]),
    end: (name: string): unknown => (calls.get(name) ?? []).shift(),
    clear: () => calls.clear()
  }
}

/**
 * Where the output is no terminal (`--verbose`): each tool call as a plain
 * line on its own stream (stderr), the reply's stream left as it is.
 */
export const makeToolLog = (write: (text: string) => void): ((event: InteractEvent) => void) => {
  const calls = makeCalls()
  return (event) => {
    if (event._tag === "ToolCallStart") calls.start(event.name, event.input)
    if (event._tag === "ToolResult") write(toolLine(event.name, calls.end(event.name), event.ok, event.ms, false))
  }
}

export const make = (write: (text: string) => void): TurnProgress => {
  // Text shown between tool calls, as written: the reply joins them trimmed with a blank line (Turn.finalReply).
  let parts: Array<string> = []
  let current = ""
  let atLineStart = true
  let shown = false
  const calls = makeCalls()

  const put = (text: string) => {
    if (text === "") return
    write(text)
    shown = true
    atLineStart = text.endsWith("\n")
  }

  const show = (event: InteractEvent) => {
    switch (event._tag) {
      case "TextDelta": {
        const text = stripControlSequences(event.text)
        current += text
        put(text)
        return
      }
      case "ToolCallStart": {
        if (current !== "") parts.push(current)
        current = ""
        calls.start(event.name, event.input)
        return
      }
      case "ToolResult": {
        const input = calls.end(event.name)
        if (!atLineStart) put("\n")
        put(toolLine(event.name, input, event.ok, event.ms))
        return
      }
    }
  }

  const finish = (reply: string): string => {
    // The reply holds each text trimmed, and none that was blank (Turn.finalReply): what was shown is
    // compared the same way, or a newline a model ends with would print the whole reply again.
    const said = [...parts, current].map((part) => part.trim()).filter((part) => part !== "").join("\n\n")
    const wasShown = shown
    const lineOpen = !atLineStart
    parts = []
    current = ""
    atLineStart = true
    shown = false
    calls.clear()
    if (!wasShown) return `${reply}\n`
    if (said === "" || !reply.startsWith(said)) return `${lineOpen ? "\n" : ""}${reply}\n`
    const rest = reply.slice(said.length)
    // After tool lines the reply's blank line between parts is already there.
    const tail = lineOpen ? rest : rest.replace(/^\n+/, "")
    return tail === "" && !lineOpen ? "" : `${tail}\n`
  }

  return { show, started: () => shown, finish }
}
