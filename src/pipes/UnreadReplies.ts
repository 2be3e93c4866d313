/**
 * Replies a run over the FIFOs left unread in interact_out when it stopped:
 * a reply counts as delivered once in the pipe, and a pipe loses what it
 * holds when its last descriptor closes. So at the stop they are taken out
 * of the pipe into a file of the memory directory (Layout's
 * `unreadReplies`), and the next run writes them to interact_out first.
 * A reader in the middle of a line at that very instant keeps its start;
 * the rest is kept.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { type FifoWriter, takeUnread } from "./PipeEnd.js"
import * as SafeFile from "../runtime/SafeFile.js"

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
    const text = kept.success
    if (text === "") return Effect.sync(() => SafeFile.removeLeftover(file))
    return Effect.flatMap(Effect.context<never>(), (context) =>
      Effect.sync(() =>
        writer.send(text, (error) => {
          if (error === undefined) SafeFile.removeLeftover(file)
          else Effect.runForkWith(context)(Effect.logWarning(`cannot send the replies kept in ${file}: ${error.message}`))
        })
      )).pipe(
        Effect.andThen(Effect.logInfo(`sending ${text.split("\n").length - 1} reply line(s) the last run left unread in ${writer.path}`))
      )
  })

/** Takes what is still unread in `pipe` and keeps it in `file`, after anything kept there before. */
export const keep = (file: string, pipe: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const unread = takeUnread(pipe)
    if (Result.isFailure(unread)) return Effect.logWarning(`cannot take the replies unread in ${pipe}: ${unread.failure.message}`)
    if (unread.success.length === 0) return Effect.void
    const kept = Result.flatMap(SafeFile.read(file), (before) =>
      SafeFile.replace(file, Buffer.concat([Buffer.from(before ?? "", "utf8"), unread.success]), true))
    const lines = unread.success.filter((byte) => byte === 0x0a).length
    return Result.isFailure(kept)
      ? Effect.logError(`${lines} reply line(s) unread in ${pipe} are lost: cannot keep them in ${file}: ${kept.failure.message}`)
      : Effect.logWarning(`${lines} reply line(s) were still unread in ${pipe}: kept in ${file}, sent first at the next start`)
  })
