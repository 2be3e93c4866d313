/**
 * The `--brain` and `--debug` flags every command that starts an agent
 * shares, as @effect/cli options. Apart from CliSettings, which a plain `run`
 * line uses without @effect/cli (see RunProgram).
 */
import * as Options from "effect/cli/Flag"

export const brainOption = Options.text("brain").pipe(
  Options.optional,
  Options.withDescription(
    "brain bridge: anthropic, openai (any Chat Completions API), none (an outside process serves the brain pipes) " +
      "or an executable; default PLANCKCLAW_BRAIN, else anthropic"
  )
)
export const debugOption = Options.boolean("debug").pipe(
  Options.withDescription("print brain payloads and HTTP statuses to stderr (same as PLANCKCLAW_DEBUG=1)")
)
