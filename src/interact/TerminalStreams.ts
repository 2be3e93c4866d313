/**
 * What a terminal session runs on (its streams and how to treat them) and
 * its one way to write to the output, a failure being an InteractError.
 * Apart from TerminalInteract.ts so that file holds the session alone and
 * reads in one sitting.
 */
import * as Effect from "effect/Effect"
import { InteractError } from "../ports/Interact.js"

export interface TerminalStreams {
  readonly input: NodeJS.ReadableStream
  readonly output: NodeJS.WritableStream
  /** Interactive mode: prompt, line editing, Ctrl-C cancels or clears (CtrlC.ts). */
  readonly interactive: boolean
  /** The output is a terminal: control sequences in replies are removed. Defaults to `interactive`. */
  readonly outputIsTerminal?: boolean
  /**
   * Completes once the agent can take a message: the hint and the first
   * prompt wait for it (lines typed meanwhile are kept). Absent: at once.
   */
  readonly ready?: Effect.Effect<void>
  /**
   * Where each tool call's line goes when the output is no terminal (`--verbose`: stderr);
   * absent, none is written. On a terminal they show dim among the text.
   */
  readonly toolLines?: NodeJS.WritableStream
}

export const write = (output: NodeJS.WritableStream, text: string) =>
  Effect.callback<void, InteractError>((resume) => {
    output.write(text, (error) =>
      resume(
        error === null || error === undefined
          ? Effect.void
          : Effect.fail(new InteractError({ message: `cannot write to the terminal: ${error.message}`, cause: error }))
      )
    )
  })
