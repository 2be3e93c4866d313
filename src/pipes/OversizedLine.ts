/**
 * A line on interact_in too long to hold never reaches the agent, so its
 * sender is told from the pipe's end: never a silent drop. The framer keeps
 * the line's start up to its first tab, the channel, when that is within
 * the limit (Framing's FrameTooLarge.head); a line with none names no one.
 */
import * as Effect from "effect/Effect"
import type { InteractError, OutboundMessage } from "../ports/Interact.js"
import type { FrameTooLarge } from "../runtime/Framing.js"

/** What the sender of a line longer than the pipe accepts is told. */
export const oversizedReply = (limit: number): string =>
  `Your message is more than ${limit} bytes long, more than this agent accepts. ` +
  "Nothing was processed: please send it in smaller parts."

/** Tells the sender of the line `error` skipped, through `send`, that it was refused; logged either way. */
export const refuse = (
  error: FrameTooLarge,
  send: (message: OutboundMessage) => Effect.Effect<void, InteractError>
): Effect.Effect<void> => {
  const head = error.head ?? ""
  const tab = head.indexOf("\t")
  if (tab === -1) {
    return Effect.logWarning(`ignored a line on interact_in with no tab (so no channel to answer) within the limit: ${error.message}`)
  }
  const channel = head.slice(0, tab)
  // Bytes that were not UTF-8: a reply on the changed name would reach no one (as InteractLine refuses such a line).
  if (channel.includes("\uFFFD")) {
    return Effect.logWarning(`ignored a line on interact_in whose channel is not valid UTF-8 (a reply could not name it): ${error.message}`)
  }
  return Effect.logWarning(`refused a line on interact_in from ${channel}: ${error.message}`).pipe(
    Effect.andThen(send({ channel, text: oversizedReply(error.limit) })),
    Effect.catch((failure) => Effect.logWarning(`could not tell ${channel} its message was refused: ${failure.message}`))
  )
}
