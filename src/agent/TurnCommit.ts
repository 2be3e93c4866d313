/**
 * The moment a turn's reply is committed (journaled, then stored), told to
 * whoever may cancel the turn (serve's TurnCancels). Asked once the reply is
 * decided, before anything of it is written: true, and the turn can no
 * longer be cancelled (a cancel from then on is too late, and its reply
 * comes); false, a cancel came first, and nothing is written. Both sides run
 * on the one JS thread, so exactly one of them wins. Without a host that
 * cancels, every commit goes ahead.
 */
import * as Context from "effect/Context"

export const TurnCommit = Context.Reference<() => boolean>("planckclaw/agent/TurnCommit", {
  defaultValue: () => always
})

const always = () => true
