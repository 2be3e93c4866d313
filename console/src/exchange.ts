/**
 * The chat's messages and their replies as the agent writes them (the
 * message route as server-sent events): a piece of text per round, each
 * tool call a line with its outcome, and a turn that can be cancelled.
 * Each message keeps its Idempotency-Key until it is settled. A stream cut
 * after the agent took the message (its 200 came: a stop, a restart, a lost
 * connection) is said so: the agent answers it anyway, at its next start if
 * it was stopped, and keeps the reply under the key; Retry sends it again
 * under that key, which gets the kept reply, or waits for the turn still
 * running, never a second turn. A message with no response at all may or
 * may not have been taken (the 200 goes out with the turn's first event),
 * and is retried the same way; only a refusal is "not sent".
 */
import { ApiError, cancelTurn, StreamCut, streamMessage } from "./api.js"
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
  /** An attempt got the 200: the agent journaled the message. */
  accepted: boolean
}

export interface Exchanges {
  readonly send: (said: string) => Promise<void>
  /** Cancels the turn running, if any. */
  readonly cancel: () => Promise<void>
  readonly running: () => boolean
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
  let turn: { readonly stop: AbortController; readonly key: string } | undefined

  // The agent stops the turn and answers its stream with the cancellation; if it had none to stop, the page stops listening.
  const cancel = async () => {
    const running = turn
    if (running === undefined) return
    controls.cancel.disabled = true
    const stopped = await cancelTurn(id, running.key).catch(() => false)
    if (!stopped) running.stop.abort()
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
    const running = new AbortController()
    turn = { stop: running, key: exchange.key }
    controls.send.disabled = true
    controls.cancel.disabled = false
    // Not left on a button now disabled (or removed, Retry's): Escape and the next message start from the box.
    controls.text.focus()
    say(`${id} is answering…`)
    const pending: Array<{ name: string; line: HTMLElement }> = []
    let settled = true
    try {
      await streamMessage(id, exchange.said, exchange.key, running.signal, (event) => {
        exchange.accepted = true
        switch (event.event) {
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
      if (running.signal.aborted) {
        line(h("div", { class: "tool failed" }, "This page stopped listening: the turn had ended, or the agent could not stop it (it then finishes it and keeps it)."))
        say("Stopped listening.")
      } else if (error instanceof ApiError && !exchange.accepted) {
        // Refused: the same message would be refused again.
        line(h("div", { class: "tool failed" }, `Not sent: ${said}`))
        say(`The message was not answered: ${said}`, true)
      } else {
        settled = false
        if (error instanceof StreamCut) exchange.accepted = true
        const retry = h("button", { type: "button", onclick: () => void attempt(exchange) }, "Retry")
        if (exchange.accepted) {
          line(h("div", { class: "tool failed" }, `Connection lost (${said}): ${id} took the message and keeps its reply. `, retry))
          say(`The connection to ${id} was lost, but it took the message: it answers it (at its next start, if it was stopped) and keeps the reply; Retry shows it without a second turn.`, true)
        } else {
          // No response: a refused connection, or one lost before the turn told anything (the stream's 200 goes out
          // with its first event), when the agent had journaled the message. The same key makes a retry safe in both.
          line(h("div", { class: "tool failed" }, `No answer (${said}): ${id} may not have the message, or may be answering it. `, retry))
          say(`No answer came from ${id} (${said}): the message may not have reached it, or it took it and answers it (at its next start, if it was stopped). Retry sends it again under the same key: it is answered once either way.`, true)
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

  const send = async (said: string) => {
    if (turn !== undefined) return
    const user = messageLine("user", said)
    const end = document.createComment("")
    log.append(user, end)
    const exchange: Exchange = { said, key: `console-${crypto.randomUUID()}`, user, end, placed: [], accepted: false }
    open.add(exchange)
    await attempt(exchange)
  }

  const unsettled = () => [...open].flatMap((exchange): Array<Node> => [exchange.user, ...exchange.placed, exchange.end])
  return { send, cancel, running: () => turn !== undefined, unsettled }
}
