/**
 * Messages still unread in interact_in when the agent stops cleanly: the
 * run removes the pipe, and a pipe loses what it holds when its last
 * descriptor closes, so they are taken out of it then and handed to the
 * agent's journal (InteractService.keepOnRead), and the next start answers
 * them. Whole lines only: part of a line whose writer had not sent its
 * newline yet, and a line too long to hold, are dropped, said in the log.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { InboundMessage } from "../ports/Interact.js"
import type { LineFramer } from "../runtime/Framing.js"
import { decodeInteractLine, eventsOptInChannel } from "./InteractLine.js"
import { takeUnread } from "./PipeEnd.js"

/** What is unread in `pipe` now, after what `framer` holds of a line, as messages (opt-ins to events left out). */
export const take = (pipe: string, framer: LineFramer): Effect.Effect<ReadonlyArray<InboundMessage>> =>
  Effect.suspend(() => {
    const unread = takeUnread(pipe)
    if (Result.isFailure(unread)) {
      return Effect.as(Effect.logWarning(`cannot take the messages unread in ${pipe} at the stop: ${unread.failure.message}`), [])
    }
    const frames = framer.push(unread.success)
    const partial = framer.end()
    const messages: Array<InboundMessage> = []
    const dropped: Array<string> = []
    for (const frame of frames) {
      if (Result.isFailure(frame)) dropped.push(`a line too long to answer (${frame.failure.message})`)
      else if (eventsOptInChannel(frame.success) === undefined) {
        const message = decodeInteractLine(frame.success)
        if (Result.isFailure(message)) dropped.push(message.failure.message)
        else messages.push(message.success)
      }
    }
    for (const frame of partial) {
      if (Result.isSuccess(frame)) dropped.push(`the first ${frame.success.length} character(s) of a line whose newline had not come`)
    }
    const notes = [
      ...(messages.length === 0 ? [] : [Effect.logInfo(`took ${messages.length} message(s) still unread in ${pipe} at the stop: the next start answers them`)]),
      ...dropped.map((what) => Effect.logWarning(`dropped at the stop, unread in ${pipe}: ${what}`))
    ]
    return Effect.as(Effect.all(notes, { discard: true }), messages)
  })
