/**
 * One agent's messages being answered, by their Idempotency-Key. A request
 * sent again under the key of one still being answered has no message of its
 * own to carry a Deferred (it is not journaled: that would be a second
 * turn), so it waits on the first one's: this map is how it finds it, and
 * the one map a reply is found through. An entry lives from the message's
 * journaling to the recording of its reply; a restarted instance makes its
 * own from the messages it reads back from the journal.
 */
import type * as Deferred from "effect/Deferred"
import * as Option from "effect/Option"
import * as Result from "effect/Result"

export interface KeysInFlight<Reply> {
  /**
   * The reply being made for `key`, if any; a failure if it answers another
   * message (`request`, IdempotencyStore.requestOf) than this one.
   */
  readonly join: (key: string, request: string) => Result.Result<Option.Option<Deferred.Deferred<Reply>>, "key-reused">
  /** Notes the message under `key` being answered (the first one under it, if two were journaled). */
  readonly add: (key: string, request: string, reply: Deferred.Deferred<Reply>) => void
  /** The reply for `key` is recorded: later requests under it find it in IdempotencyStore. */
  readonly settle: (key: string, reply: Deferred.Deferred<Reply>) => void
}

export const make = <Reply>(): KeysInFlight<Reply> => {
  // Made at the first key: most agents are sent none, and an empty Map costs 190 bytes.
  let entries: Map<string, { readonly reply: Deferred.Deferred<Reply>; readonly request: string }> | undefined
  return {
    join: (key, request) => {
      const entry = entries?.get(key)
      if (entry === undefined) return Result.succeed(Option.none())
      return entry.request === request ? Result.succeed(Option.some(entry.reply)) : Result.fail("key-reused")
    },
    add: (key, request, reply) => {
      entries ??= new Map()
      if (!entries.has(key)) entries.set(key, { reply, request })
    },
    settle: (key, reply) => {
      if (entries?.get(key)?.reply === reply) entries.delete(key)
    }
  }
}
