/**
 * The line an interactive `run` starts with, before the terminal's hint:
 * which home, brain (and its address), model and how many tools are in use,
 * so a user sees at once what they are talking to:
 *
 *   home ~/.planckclaw (the default home) · brain openai (http://127.0.0.1:11434/v1) · model qwen3:8b · 3 tools
 *
 * Only when standard input and output are a terminal: a pipe's stdout
 * carries replies alone.
 */
import * as os from "node:os"
import * as path from "node:path"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AgentConfig } from "../../config/AgentConfig.js"
import * as Home from "../../config/Home.js"
import { AnthropicBaseUrl, OpenAiBaseUrl } from "../../config/settings/Brain.js"
import { baseUrlConfig } from "../../brain/BrainRetry.js"
import * as Bridges from "../../pipes/Bridges.js"
import { Claws } from "../../ports/Claws.js"

/** A path under the user's home directory as `~/…`. */
const tilde = (dir: string): string => {
  const own = os.homedir()
  return dir === own ? "~" : dir.startsWith(own + path.sep) ? `~${dir.slice(own.length)}` : dir
}

/** The brain the settings choose, with its address when it is a built-in one. */
const brainText = Effect.gen(function*() {
  const name = yield* Bridges.BrainChoiceConfig
  const choice = yield* Effect.option(Bridges.choose("brain", name, Bridges.brainNames))
  if (Option.isNone(choice)) return name
  switch (choice.value._tag) {
    case "None":
      return "none (served from outside)"
    case "External":
      return choice.value.path
    case "Builtin": {
      const url = yield* baseUrlConfig(choice.value.name === "anthropic" ? AnthropicBaseUrl : OpenAiBaseUrl)
      return `${choice.value.name} (${url.replace(/\/+$/, "")})`
    }
  }
})

/** How long the tool count may hold the prompt back (an executable claw bridge may be slow to answer). */
const TOOLS_WAIT = Duration.seconds(2)

/** The tools the claws declare, asked through the agent's own Claws (the pipes); `served` false: nothing to ask yet. */
const toolsText = (served: boolean) =>
  served
    ? Effect.flatMap(Claws, (claws) => claws.list).pipe(
      Effect.timeoutOption(TOOLS_WAIT),
      Effect.map(Option.match({
        onNone: () => "tools not listed yet",
        onSome: ({ tools }) => `${tools.length} tool${tools.length === 1 ? "" : "s"}`
      })),
      Effect.catch(() => Effect.succeed("tools unavailable"))
    )
    : Effect.succeed("tools served from outside")

/** The start line's text. */
export const text = (clawsServed: boolean) =>
  Effect.gen(function*() {
    const home = Home.locate()
    const { model } = yield* AgentConfig
    const brain = yield* brainText
    const tools = yield* toolsText(clawsServed)
    return `home ${tilde(home.dir)} (${Home.why(home)}) · brain ${brain} · model ${model} · ${tools}`
  })

/** Prints the start line when `interactive`; a setting that cannot be read leaves it out (the run says why elsewhere). */
export const say = (interactive: boolean, clawsServed: boolean) =>
  interactive ? Effect.flatMap(text(clawsServed), Console.log).pipe(Effect.catch(() => Effect.void)) : Effect.void
