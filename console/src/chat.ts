/**
 * A chat with one agent: its earlier exchanges loaded page by page as the
 * log is scrolled up (history.ts), a message's reply streamed in as the
 * agent writes it with a line per tool call and its outcome, a turn that
 * can be cancelled (Escape, wherever the focus is), and the agent's
 * actions: compact now, forget (after a confirmation naming it), its soul
 * and summary read-only, its schedule.
 */
import { agentPath, cancelTurn, getJson, postJson, streamMessage } from "./api.js"
import { h, messageLine, say } from "./dom.js"
import { history } from "./history.js"
import { beyondTold, isCancelled } from "./replies.js"
import { schedulesSection } from "./schedules.js"

export const chatView = (id: string, back: () => void): HTMLElement => {
  const log = h("div", { class: "log", role: "log", "aria-label": `Conversation with ${id}`, tabindex: "0" })
  // A turn's lines are not kept when the log starts again from the newest page.
  const pages = history(id, log, () => [])

  const text = h("textarea", { name: "text", rows: "3", required: true })
  const send = h("button", { type: "submit" }, "Send")
  const cancel = h("button", { type: "button", disabled: true }, "Cancel turn")
  let turn: { readonly stop: AbortController; readonly key: string } | undefined
  // The agent stops the turn and answers its stream with the cancellation; if it had none to stop, the page stops listening.
  const cancelIt = async () => {
    const running = turn
    if (running === undefined) return
    cancel.disabled = true
    const stopped = await cancelTurn(id, running.key).catch(() => false)
    if (!stopped) running.stop.abort()
  }

  const sendMessage = async () => {
    const said = text.value.trim()
    if (said === "" || turn !== undefined) return
    text.value = ""
    log.append(messageLine("user", said))
    // The reply as it is written: a piece of text per round, each tool call a line between them.
    let segment: HTMLElement | undefined
    // Every piece of text told, for the `end` to say only what they did not.
    let told = ""
    const writing = () => {
      if (segment === undefined) {
        segment = messageLine("assistant", "")
        log.append(segment)
      }
      return segment.querySelector(".text")!
    }
    const line = (element: HTMLElement) => {
      if (segment !== undefined && writing().textContent === "") segment.remove()
      segment = undefined
      log.append(element)
    }
    const running = new AbortController()
    const key = `console-${crypto.randomUUID()}`
    turn = { stop: running, key }
    send.disabled = true
    cancel.disabled = false
    // Not left on the Send button now disabled: Escape and the next message start from the box.
    text.focus()
    say(`${id} is answering…`)
    const pending: Array<{ name: string; line: HTMLElement }> = []
    try {
      await streamMessage(id, said, key, running.signal, (event) => {
        switch (event.event) {
          case "text":
            told += event.data.text
            writing().textContent += event.data.text
            break
          case "tool": {
            const running = h("div", { class: "tool running" }, `⋯ ${event.data.name} ${JSON.stringify(event.data.input)}`)
            pending.push({ name: event.data.name, line: running })
            line(running)
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
      if (running.signal.aborted) {
        line(h("div", { class: "tool failed" }, "This page stopped listening: the turn had ended, or the agent could not stop it (it then finishes it and keeps it)."))
        say("Stopped listening.")
      } else {
        line(h("div", { class: "tool failed" }, `Not sent: ${(error as Error).message}`))
        say(`The message was not answered: ${(error as Error).message}`, true)
      }
    } finally {
      turn = undefined
      send.disabled = false
      cancel.disabled = true
    }
  }
  cancel.addEventListener("click", () => void cancelIt())
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault()
      void sendMessage()
    }
  })

  const memory = h("div")
  const showMemory = async () => {
    try {
      const read = await getJson<{ soul: string; summary: string }>(`${agentPath(id)}/memory`)
      memory.replaceChildren(
        h("h3", {}, "Soul"), h("pre", { class: "readonly", tabindex: "0", "aria-label": `Soul of ${id}` }, read.soul),
        h("h3", {}, "Summary"), h("pre", { class: "readonly", tabindex: "0", "aria-label": `Summary of ${id}` }, read.summary === "" ? "(no summary yet)" : read.summary))
    } catch (error) {
      memory.replaceChildren(h("p", { class: "error" }, `Soul and summary could not be read: ${(error as Error).message}`))
    }
  }
  const details = h("details", {}, h("summary", {}, "Soul and summary (read-only)"), memory)
  details.addEventListener("toggle", () => {
    if (details.open) void showMemory()
  })

  const compact = h("button", { type: "button" }, "Compact now")
  compact.addEventListener("click", async () => {
    compact.disabled = true
    say(`Compacting ${id}…`)
    try {
      const done = await postJson<{ compacted: boolean; summarised: number; kept: number }>(`${agentPath(id)}/compact`)
      // The history file was rewritten: the pages' positions point elsewhere in it now.
      if (done.compacted) await pages.reload(`${id} compacted: ${done.summarised} lines summarised, ${done.kept} kept.`)
      else say(`${id} had nothing to compact.`)
      if (details.open) void showMemory()
    } catch (error) {
      say(`${id} could not be compacted: ${(error as Error).message}`, true)
    } finally {
      compact.disabled = false
    }
  })

  const confirmForget = h("dialog", { "aria-labelledby": "forget-title" },
    h("h3", { id: "forget-title" }, `Forget ${id}?`),
    h("p", {}, `Agent ${id}'s history and summary move to an archive in its directory (nothing is deleted); its next message starts afresh.`),
    h("form", { method: "dialog", class: "row" },
      h("button", { value: "cancel", autofocus: true }, "Keep it"),
      h("button", { value: "forget" }, `Forget ${id}`)))
  confirmForget.addEventListener("close", async () => {
    if (confirmForget.returnValue !== "forget") return say(`${id} was not forgotten.`)
    try {
      // The agent forgets in its own order, after the turns before it (its /forget command).
      const done = await postJson<{ reply: string }>(`${agentPath(id)}/messages`, { text: "/forget confirm", channel: "console" })
      log.replaceChildren(messageLine("assistant", done.reply))
      pages.ended()
      say(`${id}: ${done.reply}`)
      if (details.open) void showMemory()
    } catch (error) {
      say(`${id} could not be forgotten: ${(error as Error).message}`, true)
    }
  })
  const forget = h("button", { type: "button", onclick: () => confirmForget.showModal() }, "Forget…")

  void pages.loadEarlier()
  const composer = h("form", { class: "composer", onsubmit: (event) => { event.preventDefault(); void sendMessage() } },
    h("label", {}, `Message to ${id} (Enter sends, Shift+Enter a new line, Escape cancels)`, text),
    h("div", { class: "row" }, send, cancel))
  const view = h("section", { "aria-labelledby": "chat-title" },
    h("div", { class: "row" },
      h("button", { type: "button", onclick: back }, "← Agents"),
      h("h2", { id: "chat-title" }, `Chat with ${id}`)),
    h("div", { class: "row" }, compact, forget),
    details,
    schedulesSection(id),
    confirmForget,
    pages.earlier,
    log,
    composer)

  // Escape cancels the turn wherever the focus is (Send leaves it nowhere), but in a dialog, which Escape closes.
  const onKey = (event: KeyboardEvent) => {
    if (!view.isConnected) return document.removeEventListener("keydown", onKey)
    if (event.key !== "Escape" || event.defaultPrevented || document.querySelector("dialog[open]") !== null) return
    void cancelIt()
  }
  document.addEventListener("keydown", onKey)
  return view
}
