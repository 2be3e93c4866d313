/**
 * A chat with one agent: its earlier exchanges loaded page by page as the
 * log is scrolled up (history.ts), a message's reply streamed in as the
 * agent writes it with a line per tool call and its outcome, a turn that
 * can be cancelled (Escape, wherever the focus is) and a cut one retried
 * (exchange.ts), and the agent's actions: compact now, forget (after a
 * confirmation naming it), its soul and summary read-only, its schedule.
 */
import { agentPath, getJson, postJson } from "./api.js"
import { h, messageLine, say } from "./dom.js"
import { exchanges } from "./exchange.js"
import { history } from "./history.js"
import { schedulesSection } from "./schedules.js"

export const chatView = (id: string, back: () => void): HTMLElement => {
  const log = h("div", { class: "log", role: "log", "aria-label": `Conversation with ${id}`, tabindex: "0" })
  const text = h("textarea", { name: "text", rows: "3", required: true })
  const send = h("button", { type: "submit" }, "Send")
  const cancel = h("button", { type: "button", disabled: true }, "Cancel turn")
  const turns = exchanges(id, log, { text, send, cancel })
  const pages = history(id, log, turns.unsettled)

  // The text stays in the box when no message was sent (a turn is running: Enter bypasses the disabled Send).
  const sendMessage = () => {
    const said = text.value.trim()
    if (said !== "" && turns.send(said)) text.value = ""
  }
  cancel.addEventListener("click", () => void turns.cancel())
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault()
      sendMessage()
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
  const composer = h("form", { class: "composer", onsubmit: (event) => { event.preventDefault(); sendMessage() } },
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
    void turns.cancel()
  }
  document.addEventListener("keydown", onKey)
  return view
}
