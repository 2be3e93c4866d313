/**
 * What the Discord bridge hands its hosts: each accepted message with who
 * sent it and where (Inbound makes them), and the bridge itself
 * (DiscordInteract makes it; RunPort serves it to an agent, DiscordRoutes
 * routes it). Apart from their makers, so the modules that only speak of
 * them import no maker.
 */
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type * as ChannelKinds from "./ChannelKinds.js"
import type { DiscordRefused } from "./DiscordRefused.js"
import type { Sending } from "./Replies.js"
import type { ReplyTarget } from "./ReplyTargets.js"

/** A message for the agent, with who sent it, where, and what its reply answers. */
export interface DiscordMessage {
  readonly channel: string
  readonly kind: ChannelKinds.ChannelKind
  /** The server; undefined for a direct message only (one read over REST is given its channel's). */
  readonly guildId: string | undefined
  readonly authorId: string
  /** Server nickname (a message read over REST has none), else display name, else user name. */
  readonly authorName: string
  readonly text: string
  readonly target: ReplyTarget
}

/** The bridge with who sent each message, for hosts that route by it (DiscordRoutes). */
export interface DiscordBridge {
  /** Accepted messages in arrival order; fails with the refusal once Discord closes the gateway for good. */
  readonly messages: Stream.Stream<DiscordMessage, DiscordRefused>
  /** Sends a reply answering `target` (none: a plain message in the channel). */
  readonly send: Sending["send"]
  /** Journals a reply in the outbox and delivers it in the background (see InteractService.accept). */
  readonly accept: Sending["accept"]
  /** The outbox took a reply keyed `key` already (owed, or delivered): it is not sent again. */
  readonly replyTaken: (key: string) => boolean
  /** A message of `messages` is held durably by its taker: catch-up may pass it (see Checkpoints). */
  readonly held: (message: DiscordMessage) => Effect.Effect<void>
  /** A message of `messages` its taker will not answer (answered before, or a second delivery of one it has): catch-up may pass it, typing ends. */
  readonly dropped: (message: DiscordMessage) => Effect.Effect<void>
}
