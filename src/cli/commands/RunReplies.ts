/**
 * A piped run's exit status says whether every message got a real answer:
 * a cron job or a script reads 0 as success, so a run in which any reply
 * was the apology or a misconfigured brain's (Turn.isFailureReply) ends
 * with UnansweredMessages, exit 3 (Main), after every reply was delivered.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import { isFailureReply } from "../../agent/Turn.js"
import type { InteractService } from "../../ports/Interact.js"

/** Some messages of a piped run got no real answer. */
export class UnansweredMessages extends Data.TaggedError("UnansweredMessages")<{
  readonly unanswered: number
  readonly replies: number
  readonly message: string
}> {}

/** The replies a run sent, and how many of them said the brain could not answer. */
export interface Tally {
  readonly replies: Ref.Ref<number>
  readonly unanswered: Ref.Ref<number>
}

export const makeTally: Effect.Effect<Tally> = Effect.all({ replies: Ref.make(0), unanswered: Ref.make(0) })

/** `interact` with every reply it is given to send counted in `tally`. */
export const counting = (interact: InteractService, tally: Tally): InteractService => ({
  ...interact,
  send: (message) =>
    Effect.andThen(
      Effect.andThen(
        Ref.update(tally.replies, (n) => n + 1),
        isFailureReply(message.text) ? Ref.update(tally.unanswered, (n) => n + 1) : Effect.void
      ),
      interact.send(message)
    )
})

/** Fails with UnansweredMessages when any reply counted in `tally` was not a real answer. */
export const verdict = (tally: Tally): Effect.Effect<void, UnansweredMessages> =>
  Effect.flatMap(Effect.all([Ref.get(tally.unanswered), Ref.get(tally.replies)]), ([unanswered, replies]) =>
    unanswered === 0 ? Effect.void : Effect.fail(
      new UnansweredMessages({
        unanswered,
        replies,
        message: `${unanswered} of ${replies} repl${replies === 1 ? "y" : "ies"} said the brain could not answer ` +
          "(the log above says why)"
      })
    ))
