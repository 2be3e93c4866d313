/**
 * What a failed answer of an API says, for the attempt loop (BrainRetry):
 * whether its status is worth another attempt, and what its body says that
 * no retry will change (the account out of credit or quota, a request
 * longer than the model's context window), and an OpenAI-style body's own
 * words for the messages.
 */
import * as Result from "effect/Result"
import { preview, type Scrub } from "../ports/Brain.js"
import { isJsonObject } from "../runtime/Json.js"

/**
 * A status worth another attempt, for every HTTP brain: 408, 429 and any
 * 5xx. Proxies and CDNs in front of an API answer their own (Cloudflare's
 * 520-524), and local servers odd ones (501 while loading a model); a 501
 * that means it for good costs the retries, then the apology.
 */
export const isRetryableStatus = (status: number): boolean =>
  status === 408 || status === 429 || (status >= 500 && status < 600)

/** Error types and codes that say the account is out of credit (OpenAI's quota, a billing error). */
const BILLING_ERRORS: ReadonlySet<unknown> = new Set(["insufficient_quota", "billing_error"])

/**
 * Whether a failed answer says the account behind the key is out of credit
 * or quota, which no wait will end: 402 Payment Required (OpenRouter), an
 * error typed or coded `insufficient_quota` (OpenAI's 429) or
 * `billing_error`, or a 400/403 whose words say the credit is too low
 * (Anthropic's "Your credit balance is too low"). A 429's words alone do not
 * count: Gemini says "You exceeded your current quota" of a quota per
 * minute, which passes.
 */
export const saysOutOfCredit = (status: number, body: string): boolean => {
  if (status === 402) return true
  if (status !== 400 && status !== 403 && status !== 429) return false
  const parsed = Result.getOrUndefined(Result.try(() => JSON.parse(body) as unknown))
  const error = isJsonObject(parsed) ? parsed.error : undefined
  if (!isJsonObject(error)) return false
  if (BILLING_ERRORS.has(error.code) || BILLING_ERRORS.has(error.type)) return true
  return status !== 429 && typeof error.message === "string" &&
    /credit balance is too low|insufficient (credits|balance|funds)/i.test(error.message)
}

/** The words of an error body: its error's message, code and type, or a root message or detail (vLLM, FastAPI). */
const errorWords = (body: string): string => {
  const parsed = Result.getOrUndefined(Result.try(() => JSON.parse(body) as unknown))
  if (!isJsonObject(parsed)) return ""
  const error = parsed.error
  const parts = isJsonObject(error) ? [error.message, error.code, error.type] : [error]
  return [...parts, parsed.message, parsed.detail].filter((part): part is string => typeof part === "string").join(" ")
}

/**
 * Whether a 400 (413, 422) says the request does not fit the model's
 * context window: Anthropic's "prompt is too long", OpenAI's
 * `context_length_exceeded`, vLLM's "maximum context length", llama.cpp's
 * `exceed_context_size_error`. The same request will fail again.
 */
export const saysContextTooLong = (status: number, body: string): boolean =>
  (status === 400 || status === 413 || status === 422) &&
  /prompt is too long|context_length_exceeded|exceed_context_size|maximum context length|exceeds the (available )?context/i.test(errorWords(body))

/**
 * The API's own words from an OpenAI-style error body (`{"error":{"message","type","code"}}`), or an excerpt;
 * scrubbed before the cut, which would leave a key straddling it unmatched.
 */
export const openAiMessage = (body: string, scrub: Scrub): string => {
  const parsed = Result.getOrUndefined(Result.try(() => JSON.parse(body) as unknown))
  const error = isJsonObject(parsed) ? parsed.error : undefined
  if (typeof error === "string") return preview(scrub(error))
  if (isJsonObject(error)) {
    const { code, message } = error
    const words = [typeof code === "string" ? code : undefined, message].filter((w): w is string => typeof w === "string")
    if (words.length > 0) return preview(scrub(words.join(": ")))
  }
  return body.trim() === "" ? "(empty body)" : preview(scrub(body))
}
