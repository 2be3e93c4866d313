/**
 * The chat's messages and their replies as the agent writes them (the
 * message route as server-sent events): a piece of text per round, each
 * tool call a line with its outcome, and a turn that can be cancelled.
 * Each message keeps its Idempotency-Key until it is settled. Whether the
 * agent took it is the stream's `accepted` event, which the server sends
 * once the message is journaled: a stream cut after it (a stop, a restart, a
 * lost connection) is said so, the agent answers the message anyway (at its
 * next start if it was stopped) and keeps the reply under the key; Retry
 * sends it again under that key, which gets the kept reply, or waits for the
 * turn still running, never a second turn. Without it the message is not
 * sent: a refusal is final, anything else (no connection, one lost before
 * the acknowledgement) is retried the same way, answered once even had it
 * arrived just as the connection broke. A cancel asked before `accepted`
 * is asked again when it comes: the message is taken, then cancelled. One
 * the agent refuses (the turn had ended, or was storing its reply) leaves
 * the page listening: the reply comes (or, the stream cut, Retry gets it).
 */
import { ApiError, cancelTurn, streamMessage } from "./api.js"
import { h, messageLine, say } from "./dom.js"
import { beyondTold, isCancelled } from "./replies.js"

interface Exchange {
  readonly said: string
  readonly key: string
  readonly user: HTMLElement
  /** Where its reply's lines go (a comment: no line of its own), so a retry's land in place whatever came after. */
  readonly end: Comment
  /** What its last attempt showed: a retry shows the reply in their place. */
  placed: Array<HTMLElement>
  /** An attempt got the `accepted` event: the agent journaled the message. */
  accepted: boolean
}

interface Turn {
  readonly exchange: Exchange
  /** Cancel was asked: once the agent takes the message (`accepted`), it is asked again if it had found no turn. */
  cancelling: boolean
}

export interface Exchanges {
  /** Sends a new message, unless a turn is running: whether it did (its exchange then goes on by itself). */
  readonly send: (said: string) => boolean
  /** Cancels the turn running, if any. */
  readonly cancel: () => Promise<void>
  /** The log's nodes of the exchanges not settled yet (running, or waiting for a retry), in order. */
  readonly unsettled: () => ReadonlyArray<Node>
}

/** The composer's controls: Send is off and Cancel on while a turn runs, and the message box keeps the focus. */
export interface Controls {
  readonly text: HTMLTextAreaElement
  readonly send: HTMLButtonElement
  readonly cancel: HTMLButtonElement
}

export const exchanges = (id: string, log: HTMLElement, controls: Controls): Exchanges => {
  const open = new Set<Exchange>()
  let turn: Turn | undefined

  // The agent stops the turn and answers its stream with the cancellation. When it had none to stop, the page goes on
  // listening: a turn already storing its reply (or ended) sends it, which stopping would leave unseen until a reload;
  // a message not taken yet (no `accepted`: the agent may be finishing a compaction first) is asked again once taken.
  const cancel = async () => {
    const running = turn
    if (running === undefined || running.cancelling) return
    running.cancelling = true
    controls.cancel.disabled = true
    const taken = running.exchange.accepted
    const asked = await cancelTurn(id, running.exchange.key).then(
      (stopped) => ({ stopped, failure: undefined }),
      (error: Error) => ({ stopped: false, failure: error.message })
    )
    if (asked.stopped || turn !== running) return
    if (asked.failure !== undefined) {
      // Not asked: the turn goes on, and Cancel may be tried again.
      running.cancelling = false
      controls.cancel.disabled = false
      say(`The turn could not be cancelled (${asked.failure}): ${id} goes on with it.`, true)
    } else if (taken) say(`Too late to cancel: ${id} had begun to store its reply, which follows.`)
    else if (!running.exchange.accepted) say(`${id} has not taken the message yet: it is cancelled as soon as it does.`)
  }

  const attempt = async (exchange: Exchange): Promise<void> => {
    if (turn !== undefined) return say("A turn is running: wait for its reply (or cancel it), then retry.", true)
    for (const element of exchange.placed) element.remove()
    exchange.placed = []
    const place = (element: HTMLElement) => {
      exchange.end.before(element)
      exchange.placed.push(element)
    }
    let segment: HTMLElement | undefined
    // Every piece of text told, for the `end` to say only what they did not.
    let told = ""
    const writing = () => {
      if (segment === undefined) {
        segment = messageLine("assistant", "")
        place(segment)
      }
      return segment.querySelector(".text")!
    }
    const line = (element: HTMLElement) => {
      const empty = segment !== undefined && writing().textContent === "" ? segment : undefined
      if (empty !== undefined) {
        empty.remove()
        exchange.placed = exchange.placed.filter((placed) => placed !== empty)
      }
      segment = undefined
      place(element)
    }
    const current: Turn = { exchange, cancelling: false }
    turn = current
    controls.send.disabled = true
    controls.cancel.disabled = false
    // Not left on a button now disabled (or removed, Retry's): Escape and the next message start from the box.
    controls.text.focus()
    say(`${id} is answering…`)
    const pending: Array<{ name: string; line: HTMLElement }> = []
    let settled = true
    try {
      await streamMessage(id, exchange.said, exchange.key, (event) => {
        switch (event.event) {
          case "accepted":
            exchange.accepted = true
            // Cancelled before it was taken: the turn is cancelled now (or, already committing, its reply comes).
            if (current.cancelling) void cancelTurn(id, exchange.key).catch(() => false)
            break
          case "text":
            told += event.data.text
            writing().textContent += event.data.text
            break
          case "tool": {
            const called = h("div", { class: "tool running" }, `⋯ ${event.data.name} ${JSON.stringify(event.data.input)}`)
            pending.push({ name: event.data.name, line: called })
            line(called)
            break
          }
          case "tool-result": {
            const index = pending.findIndex((call) => call.name === event.data.name)
            const call = index === -1 ? undefined : pending.splice(index, 1)[0]
            const outcome = `${event.data.ok ? "✓" : "✗"} ${event.data.name} ${event.data.ok ? "succeeded" : "failed"} (${Math.round(event.data.ms)} ms)`
            if (call === undefined) line(h("div", { class: `tool ${event.data.ok ? "ok" : "failed"}` }, outcome))
            else {
              call.line.textContent = outcome
              call.line.className = `tool ${event.data.ok ? "ok" : "failed"}`
            }
            break
          }
          case "end": {
            const cancelled = isCancelled(event.data)
            // Told in one piece (a command, a reply kept under its key), the reply itself; told as it went, only what
            // it adds (a note that it was cut short), or all of it when it is another text (the brain failed midway).
            const rest = cancelled ? event.data.reply : beyondTold(event.data.reply, told) ?? event.data.reply
            if (rest !== "") line(messageLine("assistant", rest))
            say(cancelled
              ? "Turn cancelled: nothing was stored."
              : event.data.stored ? `${id} answered.` : `${id} answered; the exchange was not stored.`)
          }
        }
        log.scrollTop = log.scrollHeight
      })
    } catch (error) {
      const said = (error as Error).message
      if (error instanceof ApiError && !exchange.accepted) {
        // Refused: the same message would be refused again.
        line(h("div", { class: "tool failed" }, `Not sent: ${said}`))
        say(`The message was not answered: ${said}`, true)
      } else {
        settled = false
        const retry = h("button", { type: "button", onclick: () => void attempt(exchange) }, "Retry")
        if (exchange.accepted) {
          line(h("div", { class: "tool failed" }, `Connection lost (${said}): ${id} took the message and keeps its reply. `, retry))
          say(`The connection to ${id} was lost, but it took the message: it answers it (at its next start, if it was stopped) and keeps the reply; Retry shows it without a second turn.`, true)
        } else {
          // No acknowledgement: no connection, or one lost before the journal's write was told (a moment's window,
          // in which the agent may have it after all). The same key makes a retry safe in both.
          line(h("div", { class: "tool failed" }, `Not sent (${said}): ${id} did not acknowledge it. `, retry))
          say(`${id} did not acknowledge the message (${said}). Retry sends it again under the same key: it is answered once, even had it arrived.`, true)
        }
      }
    } finally {
      turn = undefined
      if (settled) open.delete(exchange)
      controls.send.disabled = false
      controls.cancel.disabled = true
      log.scrollTop = log.scrollHeight
    }
  }

  const send = (said: string) => {
    if (turn !== undefined) return false
    const user = messageLine("user", said)
    const end = document.createComment("")
    log.append(user, end)
    const exchange: Exchange = { said, key: `console-${crypto.randomUUID()}`, user, end, placed: [], accepted: false }
    open.add(exchange)
    void attempt(exchange)
    return true
  }

  const unsettled = () => [...open].flatMap((exchange): Array<Node> => [exchange.user, ...exchange.placed, exchange.end])
  return { send, cancel, unsettled }
}
