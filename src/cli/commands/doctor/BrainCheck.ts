/**
 * Doctor's brain checks: the API is reachable, accepts the key, and serves
 * the model, all from one cheap authenticated GET of the model (never a
 * paid turn). Anthropic: `GET {ANTHROPIC_BASE_URL}/v1/models/{model}` with
 * `x-api-key`; OpenAI-compatible: `GET {OPENAI_BASE_URL}/models/{model}`
 * with a Bearer key, falling back to the `/models` list for servers that do
 * not serve one model (llama.cpp's).
 */
import type * as HttpClient from "effect/http/HttpClient"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AgentConfig } from "../../../config/AgentConfig.js"
import * as AnthropicBrain from "../../../brain/AnthropicBrain.js"
import { BrainChoiceConfig } from "../../../config/BrainChoice.js"
import * as ModelList from "../../../brain/ModelList.js"
import * as OpenAiBrain from "../../../brain/OpenAiBrain.js"
import * as Unreachable from "../../../brain/Unreachable.js"
import * as Bridges from "../../../pipes/Bridges.js"
import * as ExternalBridge from "../../../pipes/ExternalBridge.js"
import * as ConfigErrors from "../../../config/ConfigErrors.js"
import { AnthropicApiKey, AnthropicBaseUrl, OpenAiBaseUrl } from "../../../config/settings/Brain.js"
import { isJsonObject } from "../../../runtime/Json.js"
import { fail, type Finding, pass, skip } from "./DoctorCheck.js"
import * as HttpProbe from "./HttpProbe.js"

const settingsFailed = (subject: string) => (error: Parameters<typeof ConfigErrors.describe>[0]): ReadonlyArray<Finding> => [
  fail(subject, ConfigErrors.describe(error).replace(/^configuration error: /, ""), "fix that setting in config.env or the environment")
]

/** What an answer other than 200, 401/403 or 404 says about the brain. */
const otherAnswer = (shown: string, status: number, words: string): Finding =>
  fail(
    "brain",
    `${shown} answered ${status}: ${words}`,
    status === 429 || status >= 500
      ? "the API is busy or failing: try again later"
      : status >= 300 && status < 400
      ? "a redirect is never followed (it would carry the key elsewhere): set the base URL to the API's own address"
      : "check the base URL and the key"
  )

const unreachable = (shown: string, setting: string, result: Exclude<HttpProbe.ProbeResult, { _tag: "Answered" }>) =>
  result._tag === "NoAnswer"
    ? fail("brain", `no answer from ${shown} within ${HttpProbe.seconds}`, `check ${setting} and the network`)
    : result.kind === "refused"
    ? fail("brain", Unreachable.describe("refused", { baseUrl: shown, setting }), `start it, or set ${setting} to where it listens`)
    : result.kind === "unknown-host"
    ? fail("brain", Unreachable.describe("unknown-host", { baseUrl: shown, setting }), "check the host name and the network")
    : fail("brain", `cannot reach ${shown}: ${result.detail}`, `check ${setting} and the network`)

const notChecked = (why: string) => skip("model", `not checked: ${why}`)

const anthropic: Effect.Effect<ReadonlyArray<Finding>, never, HttpClient.HttpClient> = Effect.gen(function*() {
  const key = yield* Config.option(Config.Redacted(AnthropicApiKey.key))
  if (Option.isNone(key) || Redacted.value(key.value).trim() === "") {
    return [fail("brain", "ANTHROPIC_API_KEY is not set", "add export ANTHROPIC_API_KEY=\"...\" to config.env or set it in the environment")]
  }
  // The key's own check (characters a header cannot carry) and the base URL's, as the brain reads them.
  const config = yield* AnthropicBrain.AnthropicConfig
  const { model } = yield* AgentConfig
  const shown = HttpProbe.shownUrl(config.baseUrl)
  const secret = Redacted.value(config.apiKey)
  const result = yield* HttpProbe.get(
    `${config.baseUrl.replace(/\/+$/, "")}/v1/models/${encodeURIComponent(model)}`,
    { "x-api-key": secret, "anthropic-version": AnthropicBrain.API_VERSION }
  )
  if (result._tag !== "Answered") return [unreachable(shown, AnthropicBaseUrl.key, result), notChecked("the API was not reached")]
  switch (result.status) {
    case 200:
      return [pass("brain", `${shown} reachable, ANTHROPIC_API_KEY accepted`), pass("model", `${model} is served`)]
    case 401:
    case 403:
      return [
        fail("brain", `${shown} rejected ANTHROPIC_API_KEY (${result.status})`, "set ANTHROPIC_API_KEY to a valid key (console.anthropic.com → API keys)"),
        notChecked("the key was rejected")
      ]
    case 404: {
      // The models it does serve, when it lists them (ModelList): the line says what to choose from.
      const listing = yield* HttpProbe.get(
        `${config.baseUrl.replace(/\/+$/, "")}/v1/models?limit=1000`,
        { "x-api-key": secret, "anthropic-version": AnthropicBrain.API_VERSION }
      )
      const ids = listing._tag === "Answered" && listing.status === 200 ? ModelList.idsOf(listing.body) : undefined
      return [
        pass("brain", `${shown} reachable, ANTHROPIC_API_KEY accepted`),
        ids === undefined
          ? fail("model", `${model} is not served by ${shown} (404)`, "set PLANCKCLAW_MODEL to a model the API serves (and ANTHROPIC_BASE_URL without /v1)")
          : fail("model", `${ModelList.notServed(model, ids)} (${shown})`, "set PLANCKCLAW_MODEL (or --model) to one of them")
      ]
    }
    default:
      return [otherAnswer(shown, result.status, HttpProbe.apiWords(result.body, (text) => HttpProbe.scrub(text, secret))), notChecked("the API failed")]
  }
}).pipe(Effect.catchTag("ConfigError", (error) => Effect.succeed(settingsFailed("brain")(error))))

/** The model ids a `/models` list answer names. */
const listedModels = (body: string): ReadonlyArray<string> | undefined => {
  const parsed = HttpProbe.json(body)
  const data = isJsonObject(parsed) ? parsed.data : undefined
  return Array.isArray(data)
    ? data.flatMap((entry) => isJsonObject(entry) && typeof entry.id === "string" ? [entry.id] : [])
    : undefined
}

const openai: Effect.Effect<ReadonlyArray<Finding>, never, HttpClient.HttpClient> = Effect.gen(function*() {
  const config = yield* OpenAiBrain.OpenAiConfig
  const model = yield* OpenAiBrain.ModelConfig
  const required = yield* Effect.result(OpenAiBrain.requireKey(config))
  if (required._tag === "Failure") return [fail("brain", "OPENAI_API_KEY is not set", required.failure.message.replace(/^OPENAI_API_KEY is not set: /, ""))]
  const base = config.baseUrl.replace(/\/+$/, "")
  const shown = HttpProbe.shownUrl(config.baseUrl)
  const secret = Option.getOrUndefined(Option.map(config.apiKey, Redacted.value))
  const headers: Record<string, string> = secret === undefined ? {} : { authorization: `Bearer ${secret}` }
  const accepted = pass("brain", `${shown} reachable, ${secret === undefined ? "no key needed" : "OPENAI_API_KEY accepted"}`)
  const refused = (status: number) =>
    secret === undefined
      ? fail("brain", `${shown} wants a key (${status})`, "set OPENAI_API_KEY")
      : fail("brain", `${shown} rejected OPENAI_API_KEY (${status})`, "set OPENAI_API_KEY to a valid key for this server")
  const missingModel = fail("model", "PLANCKCLAW_MODEL is not set", "set PLANCKCLAW_MODEL to a model the server serves (e.g. gpt-4.1-mini, qwen3:8b)")

  // The list: to check the key when no model is set, and the model on servers without /models/{model}.
  const list = Effect.gen(function*() {
    const listing = yield* HttpProbe.get(`${base}/models`, headers)
    if (listing._tag !== "Answered") return [unreachable(shown, OpenAiBaseUrl.key, listing), notChecked("the server was not reached")]
    if (listing.status === 401 || listing.status === 403) return [refused(listing.status), notChecked("the key was rejected")]
    if (listing.status === 404) {
      return [fail("brain", `${shown} serves no /models (404)`, "check OPENAI_BASE_URL (it usually ends in /v1)"), notChecked("no model list")]
    }
    if (listing.status !== 200) return [otherAnswer(shown, listing.status, HttpProbe.apiWords(listing.body, (text) => HttpProbe.scrub(text, secret))), notChecked("the server failed")]
    if (Option.isNone(model)) return [accepted, missingModel]
    const ids = listedModels(listing.body) ?? []
    if (ids.includes(model.value)) return [accepted, pass("model", `${model.value} is served`)]
    const some = ids.slice(0, 5).join(", ") + (ids.length > 5 ? ", …" : "")
    return [
      accepted,
      fail("model", `${model.value} is not among the ${ids.length} models ${shown} lists${ids.length > 0 ? ` (${some})` : ""}`, "set PLANCKCLAW_MODEL to one of them")
    ]
  })

  if (Option.isNone(model)) return yield* list
  const result = yield* HttpProbe.get(`${base}/models/${encodeURIComponent(model.value)}`, headers)
  if (result._tag !== "Answered") return [unreachable(shown, OpenAiBaseUrl.key, result), notChecked("the server was not reached")]
  switch (result.status) {
    case 200:
      return [accepted, pass("model", `${model.value} is served`)]
    case 401:
    case 403:
      return [refused(result.status), notChecked("the key was rejected")]
    case 404:
      return yield* list
    default:
      return [otherAnswer(shown, result.status, HttpProbe.apiWords(result.body, (text) => HttpProbe.scrub(text, secret))), notChecked("the server failed")]
  }
}).pipe(Effect.catchTag("ConfigError", (error) => Effect.succeed(settingsFailed("brain")(error))))

/** The brain lines: `brain` (reachable, key accepted) and `model`. */
export const check: Effect.Effect<ReadonlyArray<Finding>, never, HttpClient.HttpClient> = Effect.gen(function*() {
  const name = yield* BrainChoiceConfig
  const choice = yield* Effect.result(Bridges.choose("brain", name, Bridges.brainNames))
  if (choice._tag === "Failure") {
    return [fail("brain", choice.failure.message, "set PLANCKCLAW_BRAIN to anthropic, openai, none or an executable")]
  }
  switch (choice.success._tag) {
    case "None":
      return [skip("brain", "not checked: none was chosen (an outside process serves the brain pipes)")]
    case "External": {
      // Not asked (that would be a turn), but one a run would refuse at start fails here too.
      const problem = ExternalBridge.executableProblem(choice.success.path)
      return problem === undefined ? [skip("brain", `served by ${choice.success.path}; not checked`)] : [
        fail(
          "brain",
          problem,
          "make it an executable file (chmod +x, a #! line naming an installed interpreter) " +
            "or set PLANCKCLAW_BRAIN to anthropic, openai, none or another executable"
        )
      ]
    }
    case "Builtin":
      return yield* (choice.success.name === "anthropic" ? anthropic : openai)
  }
}).pipe(Effect.catchTag("ConfigError", (error) => Effect.succeed(settingsFailed("brain")(error))))
