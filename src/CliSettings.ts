/**
 * What every command shares: the `--brain` and `--debug` flags, and the
 * settings (config.env, the environment and flags, read once through the
 * ConfigProvider, with the secrets withdrawn first).
 */
import * as path from "node:path"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ConfigFile from "./config/ConfigFile.js"
import * as Secrets from "./config/Secrets.js"
import * as Logging from "./Logging.js"

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

/**
 * Reads config.env, the environment and flags into the ConfigProvider, and
 * sets up logging. The secrets leave the process's environment first (see
 * Secrets.withdraw), before anything is started that could read it.
 */
export const withSettings = (flags: Map<string, string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const file = yield* ConfigFile.read(path.resolve("config.env"))
    const withdrawn = yield* Secrets.withdraw(Secrets.secretNames.flatMap((name) => file.get(name) ?? []))
    const provider = ConfigFile.provider({ file, environment: process.env, withdrawnSecrets: withdrawn.secrets, flags })
    const debug = yield* Logging.DebugConfig.pipe(Effect.withConfigProvider(provider))
    const warning = withdrawn.notWiped === undefined ? Effect.void : Effect.logWarning(
      `cannot wipe the secrets from this process's start-up environment (${withdrawn.notWiped}): processes of this ` +
        "user, claws included, can read them in /proc; put them in config.env rather than the environment"
    )
    return yield* Effect.zipRight(warning, effect).pipe(
      Effect.withConfigProvider(provider),
      Effect.provide(Logging.layer(debug))
    )
  })

export const debugFlags = (debug: boolean) => new Map(debug ? [["PLANCKCLAW_DEBUG", "1"]] : [])

/** `run`'s and `serve`'s flags as settings: `--brain` overrides PLANCKCLAW_BRAIN. */
export const runFlags = (options: { readonly debug: boolean; readonly brain: Option.Option<string> }) =>
  new Map([...debugFlags(options.debug), ...Option.toArray(options.brain).map((brain) => ["PLANCKCLAW_BRAIN", brain] as const)])
