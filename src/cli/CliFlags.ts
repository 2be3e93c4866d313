/**
 * The `--brain`, `--model` and `--debug` flags every command that starts an agent
 * shares (and run's `--verbose`), as effect/cli flags. Apart from CliSettings, which a plain `run`
 * line uses without effect/cli (see RunProgram).
 */
import * as Flag from "effect/cli/Flag"

export const brainOption = Flag.String("brain").pipe(
  Flag.optional,
  Flag.withDescription(
    "brain bridge: anthropic, openai (any Chat Completions API), none (an outside process serves the brain pipes) " +
      "or an executable; default PLANCKCLAW_BRAIN, else anthropic"
  )
)
export const modelOption = Flag.String("model").pipe(
  Flag.optional,
  Flag.withDescription("the model to ask, for turns and compaction; overrides PLANCKCLAW_MODEL")
)
export const debugOption = Flag.Boolean("debug").pipe(
  Flag.withoutNegation,
  Flag.withDefault(false),
  Flag.withDescription("print brain payloads and HTTP statuses to stderr (same as PLANCKCLAW_DEBUG=1)")
)
export const verboseOption = Flag.Boolean("verbose").pipe(
  Flag.withoutNegation,
  Flag.withDefault(false),
  Flag.withDescription("when standard output is not a terminal, a line per tool call on stderr; stdout stays the replies")
)
