/**
 * Which field carries the cap on an answer's length on the Chat Completions
 * wire. `max_tokens` is the one every server knows (llama.cpp's server,
 * Ollama, vLLM, LM Studio, OpenRouter, OpenAI's older models); OpenAI's
 * newest models (the o-series, gpt-5) refuse it with a 400
 * (`unsupported_parameter`) and want `max_completion_tokens`.
 *
 * The first choice is `max_completion_tokens` for those model families on
 * api.openai.com, `max_tokens` everywhere else. An answer that refuses the
 * field sent (`refuses`) makes the brain send the same request once more with
 * the other field, and the answer is remembered by that brain (its endpoint)
 * for that model, for the rest of the brain's life (`makeMemory`).
 */
import * as Result from "effect/Result"
import { isJsonObject } from "../runtime/Json.js"

export type TokenField = "max_tokens" | "max_completion_tokens"

export const otherField = (field: TokenField): TokenField =>
  field === "max_tokens" ? "max_completion_tokens" : "max_tokens"

const OPENAI_HOST = "api.openai.com"

/** o1, o1-mini, o3, o4-mini-2025-04-16, gpt-5, gpt-5-mini, gpt-5.1, …, fine-tuned ones (ft:…) too. */
const WANTS_COMPLETION_TOKENS = /^(ft:)?(o\d+|gpt-5)([-.:]|$)/i

/** The field to send first, before any server has said which it wants. */
export const firstChoice = (baseUrl: string, model: string): TokenField =>
  new URL(baseUrl).hostname.toLowerCase() === OPENAI_HOST && WANTS_COMPLETION_TOKENS.test(model)
    ? "max_completion_tokens"
    : "max_tokens"

/** What one brain learned of its endpoint: the field it takes for each model, once its server said so. */
export interface FieldMemory {
  /** The field to send for `model`. */
  readonly fieldFor: (model: string) => TokenField
  /** Remembers, for the rest of the brain's life, that its endpoint takes `field` for `model`. */
  readonly learn: (model: string, field: TokenField) => void
}

/** A brain's memory of the fields its endpoint (at `baseUrl`) takes: empty, so `firstChoice` until a server says. */
export const makeMemory = (baseUrl: string): FieldMemory => {
  const learned = new Map<string, TokenField>()
  return {
    fieldFor: (model) => learned.get(model) ?? firstChoice(baseUrl, model),
    learn: (model, field) => {
      learned.set(model, field)
    }
  }
}

/**
 * Whether an answer refuses `field` as a parameter: OpenAI's 400
 * `unsupported_parameter` naming it (`Unsupported parameter: 'max_tokens' is
 * not supported with this model. Use 'max_completion_tokens' instead.`), or
 * a 400/422 whose message says the field is unsupported, unrecognized,
 * unknown or not permitted (Azure's "Unrecognized request argument supplied",
 * a strict server's "Extra inputs are not permitted"). A message about the
 * field's value (too large, below the minimum) is not a refusal.
 */
export const refuses = (status: number, body: string, field: TokenField): boolean => {
  if (status !== 400 && status !== 422) return false
  const parsed = Result.getOrUndefined(Result.try(() => JSON.parse(body) as unknown))
  const error = isJsonObject(parsed) ? parsed.error : undefined
  if (isJsonObject(error) && error.param === field &&
    (error.code === "unsupported_parameter" || error.code === "unknown_parameter")) return true
  const message = typeof error === "string"
    ? error
    : isJsonObject(error) && typeof error.message === "string"
    ? error.message
    : body
  const named = new RegExp(`(^|[^a-z_])${field}([^a-z_]|$)`, "i")
  return named.test(message) &&
    /unsupported (parameter|argument|field)|unrecognized|unknown (parameter|argument|field)|is not supported|not permitted|extra_forbidden/i.test(message)
}
