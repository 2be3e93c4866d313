/**
 * What the HTTP API sends, as plain types importing nothing: the web
 * console (console/, a browser build checked without node's or Effect's
 * types) reads its answers through these, and the API's Schemas
 * (HttpApiDefinition, HttpApiRecords) are checked against them when the
 * package builds (`Same` below), so the two cannot drift apart unseen.
 */

/** One agent, as GET /v1/agents lists it and GET /v1/agents/{id} gives it. */
export interface AgentInfo {
  readonly id: string
  /** Lines in history.jsonl. */
  readonly historyLines: number
  /** Size of summary.md. */
  readonly summaryBytes: number
  /** When the agent last took or stored a message (ISO 8601), null when never. */
  readonly lastMessageAt: string | null
  readonly state: "running" | "released"
  /** Its usage ledger's figures for today (UTC): every token counted, and the estimated cost (null: a model without a price). */
  readonly today?: { readonly tokens: number; readonly cost: number | null }
}

/** One exchange line of GET /v1/agents/{id}/history. */
export interface HistoryEntry {
  readonly at: number
  readonly role: "user" | "assistant"
  readonly content: string
}

/** The answer to a message, as JSON or as the stream's last event. */
export interface Reply {
  readonly reply: string
  readonly stored: boolean
}

/** The stream's last event: the reply, and whether its turn was cancelled (never told by the reply's text). */
export interface End extends Reply {
  readonly cancelled: boolean
}

/** One server-sent event of POST /v1/agents/{id}/messages with `Accept: text/event-stream`. */
export type TurnEvent =
  | { readonly event: "accepted"; readonly data: { readonly key: string | null } }
  | { readonly event: "text"; readonly data: { readonly text: string } }
  | { readonly event: "tool"; readonly data: { readonly name: string; readonly input: unknown } }
  | { readonly event: "tool-result"; readonly data: { readonly name: string; readonly ok: boolean; readonly ms: number } }
  | { readonly event: "end"; readonly data: End }

/** A usage row's counts and estimated cost (null: a model without a price). */
export interface UsageCounts {
  readonly requests: number
  readonly input: number
  readonly output: number
  readonly cache_write: number
  readonly cache_read: number
  readonly cost: number | null
}

/** GET /v1/usage: every agent's usage per day for a period. */
export interface AllUsage {
  readonly since: string | null
  readonly until: string | null
  readonly rows: ReadonlyArray<UsageCounts & { readonly agent: string; readonly day: string }>
  readonly total: UsageCounts
}

/** `true` when A and B are the same type; `true satisfies Same<…>` fails the build when they are not. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
