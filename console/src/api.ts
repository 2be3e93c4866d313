/**
 * The console's calls to the API on its own origin: the token (kept in
 * sessionStorage only, for this browser session) as a bearer, JSON in and
 * out, and a message's turn read as server-sent events from a fetch body
 * (EventSource cannot POST).
 */
import type { TurnEvent } from "../../src/hosts/serve/WireShapes.js"

const TOKEN_KEY = "planckclaw-token"

export const token = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY)
}

/** A refusal of the API: its status and its `{error, message}`. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

const headers = (extra: Record<string, string> = {}): Record<string, string> => {
  const bearer = token.get()
  return bearer === null ? extra : { ...extra, authorization: `Bearer ${bearer}` }
}

const failure = async (response: Response): Promise<ApiError> => {
  const body = await response.json().catch(() => ({})) as { error?: string; message?: string }
  return new ApiError(response.status, body.error ?? "http", body.message ?? `${response.status} ${response.statusText}`)
}

export const getJson = async <A>(path: string): Promise<A> => {
  const response = await fetch(path, { headers: headers() })
  if (!response.ok) throw await failure(response)
  return await response.json() as A
}

export const postJson = async <A>(path: string, body?: unknown): Promise<A> => {
  const response = await fetch(path, {
    method: "POST",
    headers: headers({ "content-type": "application/json" }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  if (!response.ok) throw await failure(response)
  return await response.json() as A
}

export const agentPath = (id: string) => `/v1/agents/${encodeURIComponent(id)}`

// The API's answers, as the server's Schemas are checked to give them (types only: nothing of the server is bundled).
export type { AgentInfo, AllUsage, HistoryEntry, TurnEvent, UsageCounts } from "../../src/hosts/serve/WireShapes.js"

/** Splits a server-sent event stream into its events (comments and keep-alives dropped). */
const parseEvents = (block: string): TurnEvent | undefined => {
  let event = "message"
  const data: Array<string> = []
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (field === "event") event = value
    else if (field === "data") data.push(value)
  }
  if (data.length === 0) return undefined
  return { event, data: JSON.parse(data.join("\n")) } as TurnEvent
}

/**
 * The stream of a message cut after its 200, before its `end`. Its
 * `accepted` event, first, says whether the message is journaled: then it
 * will be answered, only this page lost its turn, and sent again under its
 * Idempotency-Key it gets that reply.
 */
class StreamCut extends Error {}

/**
 * Sends a message and calls `onEvent` for each event of its turn, until
 * `end`. A failure before the response is the fetch's (or an ApiError); one
 * after it, a stream ending without `end` included, a StreamCut.
 */
export const streamMessage = async (
  id: string,
  text: string,
  key: string,
  onEvent: (event: TurnEvent) => void
): Promise<void> => {
  const response = await fetch(`${agentPath(id)}/messages`, {
    method: "POST",
    headers: headers({ "content-type": "application/json", accept: "text/event-stream", "idempotency-key": key }),
    body: JSON.stringify({ text, channel: "console" })
  })
  if (!response.ok || response.body === null) throw await failure(response)
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  const read = async () => {
    try {
      return await reader.read()
    } catch (error) {
      throw new StreamCut((error as Error).message)
    }
  }
  let buffered = ""
  for (;;) {
    const { done, value } = await read()
    if (done) throw new StreamCut("the stream ended before the reply")
    buffered += value.replace(/\r\n?/g, "\n")
    for (let end = buffered.indexOf("\n\n"); end !== -1; end = buffered.indexOf("\n\n")) {
      const event = parseEvents(buffered.slice(0, end))
      buffered = buffered.slice(end + 2)
      if (event === undefined) continue
      onEvent(event)
      if (event.event === "end") return
    }
  }
}

/**
 * Asks the agent to cancel the turn of the message sent under `key`: whether
 * it had one running or queued. An agent not made yet (404: its first
 * message not taken) has none.
 */
export const cancelTurn = async (id: string, key: string): Promise<boolean> => {
  const response = await fetch(`${agentPath(id)}/cancel`, { method: "POST", headers: headers({ "idempotency-key": key }) })
  if (response.status === 404) return false
  if (!response.ok) throw await failure(response)
  return ((await response.json()) as { cancelled: boolean }).cancelled
}
