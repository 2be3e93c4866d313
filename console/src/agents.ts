/** The agents: a searchable, paged table (GET /v1/agents?search=&after=&limit=), and a way to open a chat with any id. */
import { type AgentInfo, getJson } from "./api.js"
import { dollars, h, say, when } from "./dom.js"

const PAGE = 50
const ID_RULE = /^[a-z0-9][a-z0-9._-]{0,63}$/

export const agentsView = (openChat: (id: string) => void): HTMLElement => {
  // The `after` of each page shown so far: the last is the current page's.
  const cursors: Array<string | undefined> = [undefined]
  let next: string | null = null
  let search = ""
  const body = h("tbody")
  const pageLabel = h("span", { "aria-live": "polite" })
  const previous = h("button", { type: "button", onclick: () => { cursors.pop(); void load() } }, "Previous page")
  const following = h("button", { type: "button", onclick: () => { cursors.push(next ?? undefined); void load() } }, "Next page")

  const load = async () => {
    const after = cursors[cursors.length - 1]
    const query = new URLSearchParams({ limit: String(PAGE) })
    if (after !== undefined) query.set("after", after)
    if (search !== "") query.set("search", search)
    try {
      const page = await getJson<{ agents: ReadonlyArray<AgentInfo>; next: string | null }>(`/v1/agents?${query}`)
      next = page.next
      body.replaceChildren(...page.agents.map((agent) =>
        h("tr", {},
          h("th", { scope: "row" }, h("button", { type: "button", onclick: () => openChat(agent.id), "aria-label": `Chat with ${agent.id}` }, agent.id)),
          h("td", {}, agent.state),
          h("td", {}, when(agent.lastMessageAt)),
          h("td", { class: "num" }, String(agent.historyLines)),
          h("td", { class: "num" }, String(agent.today?.tokens ?? 0)),
          h("td", { class: "num" }, dollars(agent.today === undefined ? 0 : agent.today.cost))
        )))
      if (page.agents.length === 0) body.append(h("tr", {}, h("td", { colspan: "6" }, search === "" ? "No agents yet: open a chat with a new id." : `No agent id holds “${search}”.`)))
      pageLabel.textContent = `Page ${cursors.length}${page.agents.length === 0 ? "" : `: ${page.agents[0]!.id} to ${page.agents[page.agents.length - 1]!.id}`}`
      previous.disabled = cursors.length === 1
      following.disabled = next === null
    } catch (error) {
      say(`Agents could not be listed: ${(error as Error).message}`, true)
    }
  }

  const searchBox = h("input", { type: "search", name: "search", autocomplete: "off", spellcheck: "false" })
  let typing: number | undefined
  searchBox.addEventListener("input", () => {
    clearTimeout(typing)
    typing = window.setTimeout(() => {
      search = searchBox.value.trim().toLowerCase()
      cursors.splice(1)
      void load()
    }, 250)
  })
  const newId = h("input", { name: "agent", autocomplete: "off", spellcheck: "false", placeholder: "alice" })
  const open = h("form", {
    class: "row",
    onsubmit: (event) => {
      event.preventDefault()
      const id = newId.value.trim()
      if (!ID_RULE.test(id)) return say("An agent id is lowercase letters, digits, '.', '_' or '-', at most 64, starting with a letter or digit.", true)
      openChat(id)
    }
  }, h("label", {}, "Agent id (a new one starts a new agent)", newId), h("button", { type: "submit" }, "Open chat"))

  void load()
  return h("section", { "aria-labelledby": "agents-title" },
    h("h2", { id: "agents-title" }, "Agents"),
    open,
    h("div", { class: "row" }, h("label", {}, "Search agents by id", searchBox)),
    h("div", { class: "table-wrap" },
      h("table", {},
        h("caption", { class: "skip" }, "Agents"),
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Agent"), h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, "Last message"),
          h("th", { scope: "col", class: "num" }, "History lines"), h("th", { scope: "col", class: "num" }, "Tokens today"),
          h("th", { scope: "col", class: "num" }, "Cost today"))),
        body)),
    h("div", { class: "row" }, previous, pageLabel, following))
}
