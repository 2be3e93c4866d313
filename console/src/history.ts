/**
 * An agent's earlier exchanges in the chat's log, a page at a time as it is
 * scrolled up (GET …/history?before=). A page's cursor is a position in the
 * history file, which a compaction rewrites: after one, an old cursor points
 * elsewhere in the shorter file (inside a line, which the server refuses,
 * or past its end, where it counts from the end: the newest entries again).
 * So each earlier page is asked from the second-oldest entry shown, one
 * entry more: its newest entry must be the oldest shown. When it is not, or
 * the cursor is refused (the agent compacted on its own, unseen by this
 * page), the log starts again from the newest page rather than show
 * entries twice or out of place; after the page's own Compact now it
 * starts again at once.
 */
import { agentPath, ApiError, getJson, type HistoryEntry } from "./api.js"
import { h, messageLine, say } from "./dom.js"

const PAGE = 30

/** Where the next, older page starts: the newest page, after an entry already shown, or nothing before. */
type Cursor = "newest" | { readonly before: number; readonly overlap: HistoryEntry } | "start"

export interface History {
  readonly earlier: HTMLButtonElement
  /** Loads the next older page (the newest first): whether it was shown. */
  readonly loadEarlier: () => Promise<boolean>
  /**
   * Starts again from the newest page, the log keeping only what `live` gives
   * (the exchanges not settled yet) after it; `note` is said once it is shown.
   */
  readonly reload: (note?: string) => Promise<void>
  /** The history is gone (forgotten): no page before what the log shows now. */
  readonly ended: () => void
}

const sameEntry = (a: HistoryEntry, b: HistoryEntry) => a.at === b.at && a.role === b.role && a.content === b.content

export const history = (id: string, log: HTMLElement, live: () => ReadonlyArray<Node>): History => {
  const earlier = h("button", { type: "button", onclick: () => void loadEarlier() }, "Load earlier messages")
  let cursor: Cursor = "newest"
  // Bumped by each new start: a page asked before it is not shown.
  let generation = 0
  let loading = false

  const showCursor = () => {
    earlier.disabled = cursor === "start"
    earlier.textContent = cursor === "start" ? "No earlier messages" : "Load earlier messages"
  }

  const reload = async (note?: string) => {
    generation++
    loading = false
    cursor = "newest"
    log.replaceChildren(...live())
    showCursor()
    if ((await loadEarlier()) && note !== undefined) say(note)
  }

  const loadEarlier = async (): Promise<boolean> => {
    if (loading || cursor === "start") return false
    loading = true
    const asked = generation
    const from = cursor
    try {
      const query = new URLSearchParams({ limit: String(from === "newest" ? PAGE : PAGE + 1) })
      if (from !== "newest") query.set("before", String(from.before))
      const page = await getJson<{ entries: ReadonlyArray<HistoryEntry>; next: number | null }>(`${agentPath(id)}/history?${query}`)
      if (asked !== generation) return false
      let entries = page.entries
      if (from !== "newest") {
        const first = entries[0]
        if (first === undefined || !sameEntry(first, from.overlap)) {
          void reload(`${id}'s history was compacted meanwhile: its newest messages are shown again.`)
          return false
        }
        entries = entries.slice(1)
      }
      const height = log.scrollHeight
      log.prepend(...[...entries].reverse().map((entry) => messageLine(entry.role, entry.content)))
      // The first page shows the newest at the bottom; later ones keep what was on screen in place.
      log.scrollTop = from === "newest" ? log.scrollHeight : log.scrollHeight - height
      const all = page.entries
      cursor = page.next === null || all.length < 2 ? "start" : { before: all[all.length - 2]!.at, overlap: all[all.length - 1]! }
      return true
    } catch (error) {
      if (asked !== generation) return false
      // The cursor falls inside a line of the rewritten file: compacted, as when the page does not go on.
      if (from !== "newest" && error instanceof ApiError && error.code === "bad-query") {
        void reload(`${id}'s history was compacted meanwhile: its newest messages are shown again.`)
        return false
      }
      // A new agent has no history yet.
      if (!(error instanceof ApiError && error.status === 404)) say(`History could not be read: ${(error as Error).message}`, true)
      cursor = "start"
      return false
    } finally {
      if (asked === generation) {
        loading = false
        showCursor()
      }
    }
  }
  log.addEventListener("scroll", () => {
    if (log.scrollTop < 40) void loadEarlier()
  })

  const ended = () => {
    generation++
    loading = false
    cursor = "start"
    showCursor()
  }
  return { earlier, loadEarlier, reload, ended }
}
