/**
 * Which brain thinks, as a setting: a built-in name (anthropic, openai),
 * `none` or an executable, as `--brain` takes it (the flag, when given,
 * overrides it). Read by the command line and by the usage ledger.
 */
import * as path from "node:path"
import * as Config from "effect/Config"
import { BrainChoice } from "./settings/Brain.js"
import { nonEmptyString, withDefaultWhenUnset } from "./UnsetSetting.js"

export const BrainChoiceConfig = withDefaultWhenUnset(nonEmptyString(BrainChoice.key), BrainChoice.key, BrainChoice.default)

/** The brain's name as the usage ledger writes it: the built-in name, an executable's file name, or `external`. */
export const BrainLabelConfig = Config.map(BrainChoiceConfig, (choice) =>
  choice === "none" ? "external" : choice.includes("/") ? path.basename(choice) : choice)
