/**
 * A URL as log lines show it: its scheme and host, the rest as `…`. The
 * path and query are where receivers keep their token (Slack's and
 * Discord's webhooks are a secret path), and logs must not carry it. Here,
 * below the agent and the schedule, so that every log line naming a
 * channel (a scheduled message's names its webhook) can show it so.
 */

/** `url` as `scheme://host/…` (`scheme://host/` when it has no path, query or fragment). */
export const shownUrl = (url: string): string => {
  if (!URL.canParse(url)) return "(a URL that does not parse)"
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.host}/${parsed.pathname !== "/" || parsed.search !== "" || parsed.hash !== "" ? "…" : ""}`
}

// A URL runs to the next space: a channel holds no spaces, and a webhook URL none either.
const URLS = /https?:\/\/\S+/gi

/** `channel` with each http(s) URL in it shown as shownUrl shows it (`schedule/ID@OCCURRENCE/webhook:URL`, under `run`). */
export const shownChannel = (channel: string): string => channel.replace(URLS, shownUrl)
