/**
 * The PlanckClaw web console: signs in with the token when the server asks
 * for one (kept in sessionStorage, for this browser session only), then
 * shows the agents, a chat with any of them, and usage per agent and day.
 * Plain TypeScript and the DOM; bundled by build/bundle.mjs.
 */
import { agentsView } from "./agents.js"
import { ApiError, getJson, token } from "./api.js"
import { chatView } from "./chat.js"
import { h, say } from "./dom.js"
import { usageView } from "./usage.js"

type View = "agents" | "chat" | "usage"

const main = document.getElementById("main")!
const nav = document.getElementById("nav")!
const signOut = document.getElementById("sign-out")!
let chatWith: string | undefined

const show = (view: View) => {
  for (const button of nav.querySelectorAll<HTMLButtonElement>("button[data-view]")) {
    if (button.dataset["view"] === view) button.setAttribute("aria-current", "page")
    else button.removeAttribute("aria-current")
  }
  const status = document.getElementById("status")!
  const content = view === "agents"
    ? agentsView(openChat)
    : view === "usage"
    ? usageView()
    : chatWith === undefined
    ? h("p", {}, "Choose an agent in Agents, or open a chat with a new id there.")
    : chatView(chatWith, () => show("agents"))
  main.replaceChildren(status, content)
  main.focus()
}

const openChat = (id: string) => {
  chatWith = id
  show("chat")
}

const signIn = (wrong: boolean) => {
  nav.hidden = true
  const input = h("input", { type: "password", name: "token", autocomplete: "current-password", required: true })
  const form = h("form", {
    class: "row",
    onsubmit: (event) => {
      event.preventDefault()
      token.set(input.value.trim())
      void start()
    }
  }, h("label", {}, "Token (PLANCKCLAW_HTTP_TOKEN)", input), h("button", { type: "submit" }, "Sign in"))
  main.replaceChildren(
    document.getElementById("status")!,
    h("section", { "aria-labelledby": "sign-in-title" },
      h("h2", { id: "sign-in-title" }, "Sign in"),
      h("p", {}, "This server needs its token. It is kept for this browser session only."),
      form))
  say(wrong ? "That token is wrong: the server refused it." : "", wrong)
  input.focus()
}

/** Whether the server takes the token held (or none): a wrong or missing one asks for it. */
const start = async () => {
  try {
    await getJson("/v1/agents?limit=1")
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      const hadOne = token.get() !== null
      token.clear()
      return signIn(hadOne)
    }
    say(`The server could not be reached: ${(error as Error).message}`, true)
    return
  }
  nav.hidden = false
  signOut.hidden = token.get() === null
  say("")
  show("agents")
}

nav.addEventListener("click", (event) => {
  const view = (event.target as HTMLElement).closest<HTMLButtonElement>("button[data-view]")?.dataset["view"]
  if (view === "agents" || view === "chat" || view === "usage") show(view)
})
signOut.addEventListener("click", () => {
  token.clear()
  signIn(false)
})
void start()
