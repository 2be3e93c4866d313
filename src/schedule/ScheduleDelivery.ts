/**
 * A scheduled message on its way through the agent and back: the channel
 * it is journaled under names its entry and destination (so a reply decided
 * after a crash, or after a single time's entry was removed, still knows
 * where it goes), its text is marked as scheduled (that mark is what
 * history keeps: `[scheduled ID] TEXT` in the user line, readable by any
 * build), and the reply is routed to the terminal, a Discord channel, an
 * HTTP webhook (POST of `{agent, schedule, reply}`), or nowhere but memory.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type { InteractError } from "../ports/Interact.js"
import { shownChannel, shownUrl } from "../runtime/ShownUrl.js"
import * as ScheduleEntry from "./ScheduleEntry.js"
import { type Entry, parseDestination } from "./ScheduleEntry.js"

const PREFIX = "schedule/"

/**
 * The channel the firing of `entry` for its occurrence at `occurrenceMs` is
 * journaled and answered under: `schedule/ID@OCCURRENCE/TO`. The occurrence
 * tells its reply from the reply to another firing of the entry (one
 * recovered after a restart), so that only its own reply ends its turn.
 */
export const channelOf = (entry: Entry, occurrenceMs: number): string =>
  `${PREFIX}${entry.id}@${ScheduleEntry.formatInstant(occurrenceMs)}/${entry.to}`

/**
 * The entry id, occurrence and destination a scheduled message's channel
 * names; undefined for any other channel. A channel an older build journaled
 * (`schedule/ID/TO`) names no occurrence.
 */
export const parseChannel = (channel: string): { readonly id: string; readonly occurrenceMs: number | undefined; readonly to: string } | undefined => {
  if (!channel.startsWith(PREFIX)) return undefined
  const rest = channel.slice(PREFIX.length)
  const slash = rest.indexOf("/")
  if (slash <= 0) return undefined
  const [id, at] = rest.slice(0, slash).split("@", 2) as [string, string | undefined]
  const occurrenceMs = at === undefined ? undefined : Date.parse(at)
  return { id, occurrenceMs: occurrenceMs === undefined || Number.isNaN(occurrenceMs) ? undefined : occurrenceMs, to: rest.slice(slash + 1) }
}

/** The text the agent receives (and history keeps) for a firing of `entry`. */
export const messageOf: (entry: Entry) => string = ScheduleEntry.messageOf

/** How a host reaches each destination; a destination it has none for is logged and kept in memory only. */
export interface Routes {
  /** The agent's name, in a webhook's body. */
  readonly agent: string
  /** The terminal of a running `run` (its terminal bridge). */
  readonly terminal?: ((text: string) => Effect.Effect<void, InteractError>) | undefined
  /** A Discord channel, through the host's Discord bridge. */
  readonly discord?: ((channel: string, text: string) => Effect.Effect<void, InteractError>) | undefined
}

/** What a webhook receives. */
export interface WebhookBody {
  readonly agent: string
  readonly schedule: string
  readonly reply: string
}

// A receiver briefly down gets the reply a little later: three more tries, 1 s, 2 s, 4 s apart.
const webhookRetries = Schedule.max([Schedule.exponential(Duration.seconds(1)), Schedule.recurs(3)])

/**
 * A webhook's URL as logs show it: its scheme and host, the rest as `…`.
 * The path and query are where receivers keep their token (Slack's and
 * Discord's webhooks are a secret path), and logs must not carry it.
 */
export const shownWebhook: (url: string) => string = shownUrl

/** `text` (an HTTP client's error, which quotes the URL whole) with `url` shown as shownWebhook shows it. */
const hidingWebhook = (url: string, text: string): string => {
  if (!URL.canParse(url)) return text
  const parsed = new URL(url)
  const hidden = [url, parsed.href].reduce((hiding, written) => hiding.replaceAll(written, shownWebhook(url)), text)
  // Its parts alone too, when long enough not to be mistaken for ordinary words.
  const parts = [`${parsed.pathname}${parsed.search}${parsed.hash}`, parsed.search, parsed.hash, parsed.pathname].filter((part) => part.length >= 4)
  return parts.reduce((hiding, part) => hiding.replaceAll(part, "…"), hidden)
}

/** POSTs `body` to `url` as JSON; fails with the reason (the URL not in it) when no 2xx answer comes. */
export const postWebhook = (url: string, body: WebhookBody): Effect.Effect<void, string> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* HttpClientRequest.post(url).pipe(
      HttpClientRequest.bodyText(JSON.stringify(body), "application/json"),
      client.execute,
      Effect.provideService(HttpClient.TracerPropagationEnabled, false),
      Effect.mapError((error) => hidingWebhook(url, error.message))
    )
    if (response.status < 200 || response.status > 299) return yield* Effect.fail(`the receiver answered HTTP ${response.status}`)
  }).pipe(
    Effect.timeoutOrElse({ duration: Duration.seconds(30), orElse: () => Effect.fail("no answer within 30 s") }),
    Effect.retry(webhookRetries),
    Effect.provide(FetchHttpClient.layer)
  )

/** Delivers the reply to a scheduled message (its channel from `channelOf`); every failure is logged, never raised. */
export const deliver = (routes: Routes, channel: string, reply: string): Effect.Effect<void> => {
  const named = parseChannel(channel)
  return named === undefined ? Effect.logError(`not a scheduled message's channel: ${shownChannel(channel)}`) : deliverTo(routes, named.id, named.to, reply)
}

/** Delivers the reply to a firing of entry `id` to `to`; every failure is logged, never raised. */
export const deliverTo = (routes: Routes, id: string, to: string, reply: string): Effect.Effect<void> => {
  const destination = parseDestination(to)
  const kept = (why: string) => Effect.logWarning(`schedule ${id}: ${why}; the reply is in memory only`)
  if (Result.isFailure(destination)) return kept(destination.failure)
  const target = destination.success
  const shown = target._tag === "Webhook" ? `webhook:${shownWebhook(target.url)}` : to
  const failed = (error: { readonly message: string } | string) =>
    Effect.logError(`schedule ${id}: could not deliver its reply to ${shown}: ${typeof error === "string" ? error : error.message}`)
  switch (target._tag) {
    case "None":
      return Effect.void
    case "Terminal":
      return routes.terminal === undefined
        ? kept("this host has no terminal")
        : Effect.catch(routes.terminal(`[schedule ${id}] ${reply}`), failed)
    case "Discord":
      return routes.discord === undefined
        ? kept("this host has no Discord bridge")
        : Effect.catch(routes.discord(target.channel, reply), failed)
    case "Webhook":
      return Effect.catch(postWebhook(target.url, { agent: routes.agent, schedule: id, reply }), failed)
  }
}
