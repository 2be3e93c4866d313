/** A small element builder: no library, no innerHTML (nothing the API sends is ever parsed as markup). */
type Child = Node | string | null | undefined | false

export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | ((event: Event) => void)> = {},
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value)
    else if (value === true) element.setAttribute(name, "")
    else if (value !== false) element.setAttribute(name, value)
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) element.append(child)
  return element
}

/** Says something to everyone, screen readers included (the page's status line). */
export const say = (text: string, error = false) => {
  const status = document.getElementById("status")!
  status.textContent = text
  status.className = error ? "error" : ""
}

export const dollars = (cost: number | null | undefined) => cost === null || cost === undefined ? "—" : `$${cost.toFixed(4)}`

export const when = (iso: string | null) => iso === null ? "never" : new Date(iso).toLocaleString()

export const today = () => new Date().toISOString().slice(0, 10)

/** One line of a conversation's log. */
export const messageLine = (role: "user" | "assistant", text: string) =>
  h("div", { class: `msg ${role}` }, h("span", { class: "who" }, role === "user" ? "You:" : "Agent:"), h("span", { class: "text" }, text))
