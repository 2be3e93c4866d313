/**
 * An executable bridge as a far end: what the executable of each role is
 * started with (the settings it reads, only the secret it needs, the turns'
 * events if PLANCKCLAW_EVENTS offers them) and the FarEnd it makes. Apart
 * from Bridges.ts, which chooses between it, a built-in bridge and `none`,
 * so that each reads in one sitting; Bridges re-exports EventsConfig.
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Secrets from "../config/Secrets.js"
import { Debug, Events } from "../config/settings/Agent.js"
import { switchOf } from "../config/ConfigRange.js"
import { AnthropicApiKey, AnthropicBaseUrl, Model, OpenAiApiKey, OpenAiBaseUrl } from "../config/settings/Brain.js"
import { ClawsDir } from "../config/settings/Claws.js"
import * as DiscordSetting from "../config/settings/Discord.js"
import { abandonNothing } from "./Abandon.js"
import * as ExternalBridge from "./ExternalBridge.js"
import type { FarEnd } from "./FarEnd.js"
import type { FifoPaths } from "./FifoPaths.js"
import { RunPaths } from "./RuntimeDir.js"

/** PLANCKCLAW_EVENTS: whether an executable bridge is offered events (on unless set to 0). */
export const EventsConfig = switchOf(Events)

type Role = "interact" | "brain" | "claw"

const flagOf = { interact: "bridge", brain: "brain", claw: "claw" } as const satisfies Record<Role, string>

const presentSettings = (settings: ReadonlyArray<{ readonly key: string }>) =>
  Effect.forEach(settings, ({ key }) => Effect.map(Config.option(Config.String(key)), (value) => [key, value] as const)).pipe(
    Effect.map((entries) =>
      Object.fromEntries(entries.flatMap(([name, value]) => Option.isSome(value) ? [[name, value.value]] : []))
    )
  )

/** The one secret a role's executable receives, if it is set. */
const secretFor = (name: Secrets.SecretName) =>
  Effect.map(
    Config.option(Config.Redacted(name)),
    (value): Partial<Record<Secrets.SecretName, Redacted.Redacted<string>>> =>
      Option.isSome(value) ? { [name]: value.value } : {}
  )

/** What an executable bridge of each role is started with: settings it reads, and only the secret it needs. */
const executableOptions = (
  role: Role,
  command: string,
  paths: FifoPaths
): Effect.Effect<ExternalBridge.ExternalBridgeOptions, ConfigError.ConfigError> =>
  Effect.gen(function*() {
    switch (role) {
      case "interact":
        return {
          name: role,
          command,
          paths,
          secrets: yield* secretFor(DiscordSetting.BotToken.key),
          extraEnv: yield* presentSettings([
            DiscordSetting.ChannelId,
            DiscordSetting.AllowedUsers,
            DiscordSetting.DirectMessages,
            DiscordSetting.ApiUrl,
            DiscordSetting.CatchUp,
            DiscordSetting.AttachmentBytes
          ]),
          // A terminal bridge reads our terminal, and its exit on end of input ends the run.
          stdin: "inherit",
          restart: "on-failure"
        }
      case "brain":
        return {
          name: role,
          command,
          paths,
          // Whichever API it calls: both brains' keys, nothing else.
          secrets: { ...yield* secretFor(AnthropicApiKey.key), ...yield* secretFor(OpenAiApiKey.key) },
          extraEnv: yield* presentSettings([AnthropicBaseUrl, OpenAiBaseUrl, Model, Debug]),
          // Our stdout carries only replies: what it prints is diagnostics.
          stdout: "stderr"
        }
      case "claw":
        return { name: role, command, paths, extraEnv: yield* presentSettings([ClawsDir]), stdout: "stderr" }
    }
  })

/** An executable bridge for the life of the layer; done when it will not be started again. */
export const executable = (role: Role, command: string) =>
  Effect.gen(function*() {
    const given = yield* executableOptions(role, command, yield* RunPaths)
    // An interact or brain bridge may take the turns' events if it asks (a claw has none to take).
    const offered = role !== "claw" && (yield* EventsConfig)
    const options = offered ? { ...given, extraEnv: { ...given.extraEnv, [Events.key]: "1" } } : given
    const bridge = yield* ExternalBridge.make(options).pipe(
      Effect.mapError((error) =>
        new ExternalBridge.ExternalBridgeError({ message: `--${flagOf[role]} ${command}: ${error.message}`, cause: error })
      )
    )
    return {
      done: Effect.asVoid(bridge.finished),
      exits: bridge.exits,
      abandon: abandonNothing,
      ...(offered ? { events: "announced" as const } : {})
    } satisfies FarEnd
  })
