/**
 * A serve agent's inbox as its Agent sees it: the file inbox, kept from
 * letting a delivered message go while its Idempotency-Key is not recorded
 * yet (a full disk): the journal keeps it, so a restart records the key
 * instead of forgetting it, and a retry runs no second turn.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Inbox from "../../memory/Inbox.js"
import * as Turn from "../../agent/Turn.js"
import * as IdempotencyStore from "./IdempotencyStore.js"

export const make = (
  inbox: Inbox.FileInbox,
  idempotency: IdempotencyStore.IdempotencyStore
): Effect.Effect<Inbox.InboxService, never, Scope.Scope> =>
  Effect.gen(function*() {
    // An exchange left by the previous run waiting for room in history keeps its Idempotency-Key here, before
    // this start stores it and the journal lets it go: a retry after the restart gets its reply, not a second turn.
    for (const pending of [...inbox.recovered, ...(yield* inbox.backlog)]) {
      const key = pending.idempotencyKey
      if (key === undefined || Option.isSome(idempotency.lookup(key)) || Option.isNone(pending.reply)) continue
      const { stored, text } = pending.reply.value
      if (!Turn.isFailureReply(text)) {
        yield* idempotency.remember(key, { reply: text, stored, request: IdempotencyStore.requestOf(pending) })
      }
    }
    // Messages delivered whose Idempotency-Key could not be recorded yet: kept in the journal until it is.
    // (Made at the first one: most agents never hold any, and an empty Map costs 190 bytes.)
    let heldByKey: Map<string, Inbox.Pending> | undefined
    // Read after the flush: the keys it recorded go.
    const releaseRecorded = (held: Map<string, Inbox.Pending>) =>
      Effect.suspend(() =>
        Effect.forEach([...held].filter(([key]) => !idempotency.unwritten(key)), ([key, pending]) => {
          held.delete(key)
          return inbox.release(pending)
        }, { discard: true })
      )
    const recordHeld = Effect.suspend(() =>
      heldByKey === undefined || heldByKey.size === 0 ? Effect.void : Effect.andThen(idempotency.flush, releaseRecorded(heldByKey))
    )
    // At a stop, one more try for the keys not recorded yet (before the journal closes: registered after it opened).
    yield* Effect.addFinalizer(() => recordHeld)

    const watched: Inbox.InboxService = {
      ...inbox,
      delivered: (pending) =>
        Effect.suspend(() => {
          const key = pending.idempotencyKey
          if (key !== undefined && idempotency.unwritten(key)) {
            heldByKey ??= new Map()
            heldByKey.set(key, pending)
            return inbox.deliveredKept(pending)
          }
          // Room again (this reply's key was recorded, or it had none): the keys left unrecorded go now.
          return Effect.andThen(recordHeld, inbox.delivered(pending))
        })
    }
    return watched
  })
