/**
 * The Interact port: where messages come from and where replies go.
 * An interact adapter (terminal, Discord, a FIFO pair, an in-memory queue)
 * implements it.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"

/** A message from a user, tagged with the channel the reply must go back to. */
export interface InboundMessage {
  readonly channel: string
  readonly text: string
  /**
   * Not a message but a cancel (a Ctrl-C on the terminal): the channel's
   * messages not answered yet are answered `CANCELLED`, the turn running for
   * one of them interrupted, and none of them stored. Its text is empty.
   */
  readonly cancel?: boolean
}

/** The reply to a message cancelled before its reply was decided. */
export const CANCELLED = "Cancelled: nothing of that message was kept."

/** A cancel for `channel` (see `InboundMessage.cancel`). */
export const cancelFor = (channel: string): InboundMessage => ({ channel, text: "", cancel: true })

/** A reply for a channel. */
export interface OutboundMessage {
  readonly channel: string
  readonly text: string
  /**
   * The message this answers, named the same by every process that may send
   * the reply again (the agent's inbox journal key, kept across a crash; in
   * serve's Discord routes `discord-<message id>`): a bridge that can make a
   * second send of one reply a no-op uses it (Discord: as the parts' nonces).
   */
  readonly key?: string | undefined
  /**
   * Sent by the agent on its own (a scheduled message), not a reply to a
   * message this bridge delivered: a bridge that shows a reply is coming
   * (Discord's typing indicator) leaves that showing for the replies still due.
   */
  readonly unprompted?: boolean | undefined
}

/**
 * What a turn does while its reply is being written, for an adapter that
 * shows it (the terminal): the model's text as it comes, each tool call,
 * each tool's outcome. The reply still comes whole through `send`.
 */
export type InteractEvent =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ToolCallStart"; readonly name: string; readonly input: unknown }
  | { readonly _tag: "ToolResult"; readonly name: string; readonly ok: boolean; readonly ms: number }

export class InteractError extends Data.TaggedError("InteractError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface InteractService {
  /**
   * Inbound messages in arrival order. The agent consumes it once; the
   * adapter buffers while a turn runs, so nothing is dropped. The stream ends
   * when the adapter has no more input (for example stdin closed).
   */
  readonly messages: Stream.Stream<InboundMessage, InteractError>
  /**
   * For an adapter that reads ahead of `messages` (a pipe: every line one
   * read brings): from now on `keep` gets the messages of each read at once,
   * in order, before `messages` hands them on (the same objects, which it
   * still does), so the agent journals them there and a stop or a kill
   * before it takes them loses nothing read. At the scope's close, what is
   * still unread (a pipe loses it when it closes) is read and given to
   * `keep` alone, and reading stops.
   */
  readonly keepOnRead?: (keep: (read: ReadonlyArray<InboundMessage>) => void) => Effect.Effect<void, never, Scope.Scope>
  /** Delivers one reply; fails only when it finally cannot be delivered. */
  readonly send: (message: OutboundMessage) => Effect.Effect<void, InteractError>
  /**
   * An adapter that keeps replies of its own (a journal, like Discord's
   * outbox) takes one here: it completes once the reply is in the adapter's
   * keeping, to be delivered even across a crash, and gives the delivery,
   * which completes when the reply is delivered or given up (the adapter
   * logs a failure). Adapters without one deliver within `send`.
   */
  readonly accept?: (message: OutboundMessage) => Effect.Effect<Effect.Effect<void>>
  /**
   * An adapter that shows a turn as it goes takes its events here, for the
   * channel's message being answered, before its reply. Absent: the agent
   * sends none (and a pipe carries none).
   */
  readonly event?: (channel: string, event: InteractEvent) => Effect.Effect<void, InteractError>
  /**
   * Whether `channel`'s turns are shown as they go (`event` takes them), for
   * an adapter that shows some channels only (a pipe whose bridge opts in
   * per channel). Absent: every channel's, when `event` is there.
   */
  readonly showsEvents?: (channel: string) => boolean
}

export class Interact extends Context.Service<Interact, InteractService>()("planckclaw/Interact") {}

// C0 and C1 controls except tab and newline: terminals and bridges choke on them.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g

const NOT_BLANK = /[^\t\n\v\f\r ]/

/**
 * Nothing but ASCII spaces, tabs and line breaks: the one message the agent
 * sends no reply to. ASCII only, so that a bridge's own test (the shell's
 * `[:space:]`, in any locale) never skips less than this, and a bridge that
 * waits for a reply to each line it sends never waits in vain.
 */
export const isBlank = (text: string): boolean => !NOT_BLANK.test(text)

/**
 * Cleans inbound text: CR LF becomes LF, control characters go. `none` when
 * nothing but blanks is left (see `isBlank`; a message that was only control
 * characters is answered with a refusal, one that was blank is not answered).
 */
export const sanitize = (text: string): Option.Option<string> => {
  const clean = text.replace(/\r\n?/g, "\n").replace(CONTROL, "")
  return isBlank(clean) ? Option.none() : Option.some(clean)
}
