/**
 * An agent's schedule in its chat view (GET /v1/agents/{id}/schedules):
 * each entry's message, when it fires, where its reply goes, and its next
 * and last runs in this browser's local time. Read when the section is
 * opened, again at each opening; the schedule is changed with `planckclaw
 * schedule` or by asking the agent, not here.
 */
import { agentPath, getJson } from "./api.js"
import { h, when } from "./dom.js"

interface ScheduleView {
  readonly id: string
  readonly written: string
  readonly text: string
  readonly to: string
  readonly lastRun: string | null
  readonly nextRun: string | null
}

const REPLY_TO: Record<string, string> = { none: "memory only", terminal: "the terminal of a run" }

const row = (entry: ScheduleView) =>
  h("tr", {},
    h("th", { scope: "row", class: "wrap" }, entry.text),
    h("td", {}, entry.written),
    h("td", {}, entry.nextRun === null ? "none" : when(entry.nextRun)),
    h("td", {}, when(entry.lastRun)),
    h("td", { class: "wrap" }, REPLY_TO[entry.to] ?? entry.to),
    h("td", {}, entry.id))

export const schedulesSection = (id: string): HTMLDetailsElement => {
  const shown = h("div")
  const show = async () => {
    shown.replaceChildren(h("p", {}, "Reading the schedule…"))
    try {
      const { entries } = await getJson<{ entries: ReadonlyArray<ScheduleView> }>(`${agentPath(id)}/schedules`)
      shown.replaceChildren(entries.length === 0
        ? h("p", {}, `${id} has no schedule. Add one with planckclaw schedule add --agent ${id}, or ask ${id} in chat (“remind me at 9 to …”).`)
        : h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `Schedules of ${id}` },
          h("table", {},
            h("thead", {}, h("tr", {}, ...["Message", "When", "Next run", "Last run", "Reply to", "Id"].map((title) => h("th", { scope: "col" }, title)))),
            h("tbody", {}, ...entries.map(row)))))
    } catch (error) {
      shown.replaceChildren(h("p", { class: "error" }, `The schedule could not be read: ${(error as Error).message}`))
    }
  }
  const details = h("details", {}, h("summary", {}, "Schedules"), shown)
  details.addEventListener("toggle", () => {
    if (details.open) void show()
  })
  return details
}
