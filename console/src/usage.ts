/** Usage per agent and day for a chosen period (GET /v1/usage?since=&until=). */
import { type AllUsage, getJson, type UsageCounts as Counts } from "./api.js"
import { dollars, h, say, today } from "./dom.js"


const cells = (row: Counts) => [
  h("td", { class: "num" }, String(row.requests)),
  h("td", { class: "num" }, String(row.input)),
  h("td", { class: "num" }, String(row.output)),
  h("td", { class: "num" }, String(row.cache_write)),
  h("td", { class: "num" }, String(row.cache_read)),
  h("td", { class: "num" }, dollars(row.cost))
]

export const usageView = (): HTMLElement => {
  const weekAgo = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10)
  const since = h("input", { type: "date", name: "since", value: weekAgo, required: true })
  const until = h("input", { type: "date", name: "until", value: today(), required: true })
  const agent = h("input", { type: "search", name: "agent", autocomplete: "off", spellcheck: "false" })
  const body = h("tbody")
  const foot = h("tfoot")
  let rows: AllUsage["rows"] = []
  // Thousands of agents: the rows of the agents whose id holds the filter, 500 at most (the total is the period's).
  const show = () => {
    const holds = agent.value.trim().toLowerCase()
    const shown = rows.filter((row) => row.agent.includes(holds))
    body.replaceChildren(...shown.slice(0, 500).map((row) => h("tr", {}, h("th", { scope: "row" }, row.agent), h("td", {}, row.day), ...cells(row))))
    if (shown.length === 0) body.append(h("tr", {}, h("td", { colspan: "8" }, holds === "" ? "No usage in this period." : `No usage of an agent whose id holds “${holds}”.`)))
    if (shown.length > 500) body.append(h("tr", {}, h("td", { colspan: "8" }, `${shown.length - 500} more rows: narrow the filter or the period.`)))
  }
  agent.addEventListener("input", show)
  const load = async () => {
    try {
      const usage = await getJson<AllUsage>(`/v1/usage?${new URLSearchParams({ since: since.value, until: until.value })}`)
      rows = usage.rows
      show()
      foot.replaceChildren(h("tr", {}, h("th", { scope: "row", colspan: "2" }, "Total, every agent"), ...cells(usage.total)))
      say(`Usage from ${since.value} to ${until.value}: ${usage.rows.length} agent-days.`)
    } catch (error) {
      say(`Usage could not be read: ${(error as Error).message}`, true)
    }
  }
  void load()
  return h("section", { "aria-labelledby": "usage-title" },
    h("h2", { id: "usage-title" }, "Usage per agent and day"),
    h("form", { class: "row", onsubmit: (event) => { event.preventDefault(); void load() } },
      h("label", {}, "From", since), h("label", {}, "To", until), h("button", { type: "submit" }, "Show")),
    h("div", { class: "row" }, h("label", {}, "Only agents whose id holds", agent)),
    h("div", { class: "table-wrap" },
      h("table", {},
        h("thead", {}, h("tr", {},
          ...["Agent", "Day"].map((title) => h("th", { scope: "col" }, title)),
          ...["Requests", "Tokens in", "Tokens out", "Cache writes", "Cache reads", "Cost"].map((title) => h("th", { scope: "col", class: "num" }, title)))),
        body, foot)))
}
