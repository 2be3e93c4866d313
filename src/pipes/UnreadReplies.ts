/**
 * Replies a run over the FIFOs left unread in interact_out when it stopped:
 * a reply counts as delivered once in the pipe, and a pipe loses what it
 * holds when its last descriptor closes. So at the stop they are taken out
 * of the pipe into a file of the memory directory (Layout's
 * `unreadReplies`), and the next run writes them to interact_out first.
 * A reader in the middle of a line at that very instant keeps its start;
 * the rest is kept. Only whole lines are: a reply whose write had not
 * finished (the pipe was full) was not delivered, so its inbox entry stays
 * and the next run sends it whole; its first bytes in the pipe are dropped,
 * else they would begin the line it is sent again on.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { type FifoWriter, takeUnread } from "./PipeEnd.js"
import * as SafeFile from "../runtime/SafeFile.js"

/** What is dropped of the unread bytes, said in the log: the start of a line whose write had not finished. */
const dropped = (bytes: number, where: string) =>
  bytes === 0 ? Effect.void : Effect.logWarning(
    `dropped the last ${bytes} byte(s) unread in ${where}, the start of a line whose write had not finished: ` +
      "a reply is still owed, and the next start sends it whole"
  )

/**
 * Puts back what the last run left unread, queued on `writer` before any new
 * reply but not awaited: with no reader yet, a start must not wait for one.
 * The file goes once the pipe has taken it all.
 */
export const resend = (file: string, writer: FifoWriter): Effect.Effect<void> =>
  Effect.suspend(() => {
    // There is usually nothing: SafeFile.read sees that by an lstat, without a failed open.
    const kept = SafeFile.read(file)
    if (Result.isFailure(kept)) return Effect.logWarning(`cannot read the replies kept from the last run: ${kept.failure.message}`)
    if (kept.success === undefined) return Effect.void
    // Whole lines only, as `keep` writes them (a file kept by an older version may end in part of one).
    const text = kept.success.slice(0, kept.success.lastIndexOf("\n") + 1)
    const partial = dropped(Buffer.byteLength(kept.success) - Buffer.byteLength(text), file)
    if (text === "") return Effect.andThen(partial, Effect.sync(() => SafeFile.removeLeftover(file)))
    return Effect.flatMap(Effect.context<never>(), (context) =>
      Effect.sync(() =>
        writer.send(text, (error) => {
          if (error === undefined) SafeFile.removeLeftover(file)
          else Effect.runForkWith(context)(Effect.logWarning(`cannot send the replies kept in ${file}: ${error.message}`))
        })
      )).pipe(
        Effect.andThen(partial),
        Effect.andThen(Effect.logInfo(`sending ${text.split("\n").length - 1} reply line(s) the last run left unread in ${writer.path}`))
      )
  })

/** Takes what is still unread in `pipe` and keeps its whole lines in `file`, after anything kept there before. */
export const keep = (file: string, pipe: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const unread = takeUnread(pipe)
    if (Result.isFailure(unread)) return Effect.logWarning(`cannot take the replies unread in ${pipe}: ${unread.failure.message}`)
    const whole = unread.success.subarray(0, unread.success.lastIndexOf(0x0a) + 1)
    const partial = dropped(unread.success.length - whole.length, pipe)
    if (whole.length === 0) return partial
    const kept = Result.flatMap(SafeFile.read(file), (before) =>
      SafeFile.replace(file, Buffer.concat([Buffer.from(before ?? "", "utf8"), whole]), true))
    const lines = whole.filter((byte) => byte === 0x0a).length
    return Effect.andThen(
      partial,
      Result.isFailure(kept)
        ? Effect.logError(`${lines} reply line(s) unread in ${pipe} are lost: cannot keep them in ${file}: ${kept.failure.message}`)
        : Effect.logWarning(`${lines} reply line(s) were still unread in ${pipe}: kept in ${file}, sent first at the next start`)
    )
  })
