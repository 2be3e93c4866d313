/**
 * A setting the chosen bridges cannot start without (the API key of a brain
 * on a public host, the Discord bot token). `message` says how to set it;
 * it never holds a secret's value.
 */
import * as Data from "effect/Data"

export class MissingSetting extends Data.TaggedError("MissingSetting")<{
  /** The key to set, e.g. `ANTHROPIC_API_KEY`. */
  readonly key: string
  readonly message: string
}> {}
