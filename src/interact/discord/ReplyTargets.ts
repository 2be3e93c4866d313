/**
 * What a reply answers (a message, or a slash command's interaction), and
 * how the run names it on the pipes. Each message goes to the agent on
 * interact_in with a channel naming its question, `CHANNEL/mMESSAGE` or
 * `CHANNEL/iINTERACTION`; the agent answers on that channel, so each reply
 * line says which question it answers, whatever the order replies come in
 * (a restart's recovered messages are answered first) and across restarts.
 * A plain channel id (a bridge of another kind, a journal of an older
 * version) names no question: its reply quotes none.
 */

/** The question a reply answers. */
export type ReplyTarget =
  | { readonly _tag: "Message"; readonly messageId: string }
  | {
    readonly _tag: "Interaction"
    readonly applicationId: string
    readonly interactionId: string
    readonly token: string
  }

/** The Discord id a question goes by: the message's, or the interaction's. */
export const questionId = (target: ReplyTarget): string =>
  target._tag === "Message" ? target.messageId : target.interactionId

/** The channel an answer to `target` in `channel` is addressed to on the pipes. */
export const addressOf = (channel: string, target: ReplyTarget): string =>
  `${channel}/${target._tag === "Message" ? "m" : "i"}${questionId(target)}`

/** What a reply's address names: the channel, and the question when it names one. */
export interface Address {
  readonly channel: string
  readonly question?: { readonly _tag: "Message" | "Interaction"; readonly id: string } | undefined
}

const addressed = /^(\d{1,20})\/([mi])(\d{1,20})$/

export const parseAddress = (address: string): Address => {
  const parts = addressed.exec(address)
  return parts === null
    ? { channel: address }
    : { channel: parts[1]!, question: { _tag: parts[2] === "m" ? "Message" : "Interaction", id: parts[3]! } }
}
