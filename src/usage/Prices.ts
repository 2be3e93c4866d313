/**
 * What tokens cost, in US dollars per million, for `planckclaw usage`'s
 * estimate: a built-in table of current Claude and OpenAI models, merged
 * with the file PLANCKCLAW_PRICES names (a JSON object of the same shape;
 * its entries win). A model is priced by the longest name in the table it
 * starts with (so dated names such as claude-haiku-4-5-20251001 match),
 * after any `vendor/` prefix (OpenRouter's `openai/gpt-4.1-mini`).
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { Prices as PricesSetting } from "../config/settings/Brain.js"
import { madeOnFirstCall } from "../runtime/FirstCall.js"
import * as SafeFile from "../runtime/SafeFile.js"

const PerMillion = Schema.Number.check(Schema.isGreaterThanOrEqualTo(0), Schema.isFinite())

export const Price = Schema.Struct({
  input: PerMillion,
  output: PerMillion,
  cache_write: PerMillion,
  cache_read: PerMillion
})
export type Price = typeof Price.Type

export const PriceTable = Schema.Record(Schema.String.check(Schema.isMinLength(1)), Price)
export type PriceTable = typeof PriceTable.Type

const price = (input: number, output: number, cacheWrite: number, cacheRead: number): Price => ({
  input,
  output,
  cache_write: cacheWrite,
  cache_read: cacheRead
})

/**
 * List prices (USD per million tokens) at the time of writing. Anthropic
 * charges 1.25 x input to write the 5-minute cache and 0.1 x to read it;
 * OpenAI caches on its own, at no write premium.
 */
export const BUILT_IN: PriceTable = {
  "claude-opus-4": price(15, 75, 18.75, 1.5),
  "claude-sonnet-4": price(3, 15, 3.75, 0.3),
  "claude-3-7-sonnet": price(3, 15, 3.75, 0.3),
  "claude-haiku-4-5": price(1, 5, 1.25, 0.1),
  "claude-3-5-haiku": price(0.8, 4, 1, 0.08),
  "gpt-5": price(1.25, 10, 1.25, 0.125),
  "gpt-5-mini": price(0.25, 2, 0.25, 0.025),
  "gpt-5-nano": price(0.05, 0.4, 0.05, 0.005),
  "gpt-4.1": price(2, 8, 2, 0.5),
  "gpt-4.1-mini": price(0.4, 1.6, 0.4, 0.1),
  "gpt-4.1-nano": price(0.1, 0.4, 0.1, 0.025),
  "gpt-4o": price(2.5, 10, 2.5, 1.25),
  "gpt-4o-mini": price(0.15, 0.6, 0.15, 0.075),
  "o4-mini": price(1.1, 4.4, 1.1, 0.275),
  "o3": price(2, 8, 2, 0.5)
}

/** PLANCKCLAW_PRICES could not be used: unreadable, not JSON, or not a price table. */
export class PricesError extends Data.TaggedError("PricesError")<{
  readonly reason: "unreadable" | "invalid"
  readonly message: string
}> {}

export const PricesFileConfig = Config.option(Config.NonEmptyString(PricesSetting.key))

const decodeTable = madeOnFirstCall(() => Schema.decodeUnknownResult(PriceTable, { onExcessProperty: "error" }))
const formatIssue = madeOnFirstCall(() => SchemaIssue.makeFormatterDefault())

/** The table in `text`, or why not (naming the file). */
export const parsePrices = (file: string, text: string): Result.Result<PriceTable, PricesError> => {
  const json = Result.try(() => JSON.parse(text) as unknown)
  if (Result.isFailure(json)) {
    return Result.fail(new PricesError({ reason: "invalid", message: `PLANCKCLAW_PRICES: ${file} is not JSON` }))
  }
  return Result.mapError(decodeTable(json.success), (error) =>
    new PricesError({
      reason: "invalid",
      message: `PLANCKCLAW_PRICES: ${file} is not a price table ({"model": {"input", "output", "cache_write", ` +
        `"cache_read"} in USD per million tokens}): ${formatIssue(error.issue).replace(/\s+/g, " ")}`
    }))
}

/** The price table as the host already read it (serve's host, once for all its agents); undefined: none given. */
export const ParsedPrices = Context.Reference<PriceTable | undefined>("planckclaw/usage/ParsedPrices", {
  defaultValue: () => undefined
})

/** The built-in table, with PLANCKCLAW_PRICES's entries over it when set. */
export const PricesConfig = PricesFileConfig.pipe(
  Effect.flatMap(Option.match({
    onNone: () => Effect.succeed(BUILT_IN),
    onSome: (file) =>
      Effect.flatMap(
        Effect.fromResult(Result.mapError(
          SafeFile.read(file),
          (error) => new PricesError({ reason: "unreadable", message: `PLANCKCLAW_PRICES: cannot read ${file}: ${error.message}` })
        )),
        (text) =>
          text === undefined
            ? Effect.fail(new PricesError({ reason: "unreadable", message: `PLANCKCLAW_PRICES: ${file} does not exist` }))
            : Effect.map(Effect.fromResult(parsePrices(file, text)), (table): PriceTable => ({ ...BUILT_IN, ...table }))
      )
  }))
)

/** The price table: as the host read it (ParsedPrices), else read from the settings in context. */
export const priceTable = Effect.flatMap(
  Effect.service(ParsedPrices),
  (parsed) => parsed === undefined ? PricesConfig : Effect.succeed(parsed)
)

/** The price of `model`: the longest table name it starts with, after any `vendor/` prefix. */
export const priceOf = (table: PriceTable, model: string): Price | undefined => {
  const bare = model.includes("/") ? model.slice(model.lastIndexOf("/") + 1) : model
  let best: string | undefined
  for (const name of Object.keys(table)) {
    if ((model.startsWith(name) || bare.startsWith(name)) && (best === undefined || name.length > best.length)) best = name
  }
  return best === undefined ? undefined : table[best]
}
