/**
 * A brain server that cannot be reached at all: nothing listens at its
 * address (connection refused) or its host name is not found. Waiting will
 * rarely help, and the user is told so in one line that names the address,
 * rather than an outage or a timeout. A terminal run gives up at the first
 * such failure (GiveUpWhenUnreachable, which RunProgram sets); `serve` keeps
 * retrying on its schedule, as a server that restarts comes back.
 */
import * as Context from "effect/Context"
import type { Misconfigured } from "../ports/Brain.js"
import { errnoCode } from "../runtime/Errors.js"

export type UnreachableKind = "refused" | "unknown-host"

/** Where a brain's API is, as its settings say: the base URL and the setting that holds it. */
export interface BrainAddress {
  readonly baseUrl: string
  readonly setting: string
}

const REFUSED: ReadonlySet<string> = new Set(["ECONNREFUSED"])
// EAI_AGAIN: the resolver itself could not answer (no network, no DNS server).
const UNKNOWN_HOST: ReadonlySet<string> = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME"])

/**
 * What a failed request's cause says, walked down its `cause`s (fetch wraps
 * the system error in `fetch failed`) and into an AggregateError's errors
 * (a host with several addresses, each refused). Bounded: a cause may loop.
 */
export const classify = (error: unknown): UnreachableKind | undefined => {
  const pending: Array<unknown> = [error]
  for (let seen = 0; pending.length > 0 && seen < 32; seen++) {
    const current = pending.shift()
    const code = errnoCode(current)
    if (code !== undefined && REFUSED.has(code)) return "refused"
    if (code !== undefined && UNKNOWN_HOST.has(code)) return "unknown-host"
    if (typeof current !== "object" || current === null) continue
    const { cause, errors } = current as { readonly cause?: unknown; readonly errors?: unknown }
    if (cause !== undefined) pending.push(cause)
    if (Array.isArray(errors)) pending.push(...errors)
  }
  return undefined
}

/** The base URL as it may be shown: no trailing slash (a base URL holds no credentials, query or fragment). */
const shown = (baseUrl: string): string => baseUrl.replace(/\/+$/, "")

/** The one line that names the failure and the address: `nothing is listening at URL: is the model server running?`. */
export const describe = (kind: UnreachableKind, address: BrainAddress): string =>
  kind === "refused"
    ? `nothing is listening at ${shown(address.baseUrl)}: is the model server running?`
    : `the host ${new URL(address.baseUrl).hostname} of ${shown(address.baseUrl)} is not found: check ${address.setting}`

/** What the user is told (never a value: Misconfigured), and the setting the log names. */
export const misconfigured = (kind: UnreachableKind, address: BrainAddress): Misconfigured => ({
  problem: kind === "refused"
    ? "nothing is listening at the model server's address: is it running?"
    : "the model server's host name is not found",
  setting: address.setting
})

/**
 * Whether a brain gives up at the first connection refused or unknown host
 * (a run, whose user waits at the terminal or in a script) rather than
 * retrying it on the schedule (the default: serve, bridges, compact).
 */
export const GiveUpWhenUnreachable = Context.Reference<boolean>("planckclaw/brain/GiveUpWhenUnreachable", {
  defaultValue: () => false
})
