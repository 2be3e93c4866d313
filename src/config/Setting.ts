/**
 * What a setting is, as plain data: its key, type, range, default, what it
 * does and whether it is secret. Each setting is declared once, in
 * src/config/settings/; its Effect `Config` is built from that declaration
 * (ConfigRange), and `planckclaw help config`, config.env.example and
 * docs/configuration.md are rendered from it (SettingsReference). No Effect
 * here: bin/planckclaw renders the help from these without loading the agent.
 */

interface Declared {
  readonly key: string
  /** One line: what it does, as `help config`, the reference and config.env.example say it. */
  readonly description: string
  /** More, for the reference in docs/ only (Markdown). */
  readonly details?: string
  /** Never logged, never passed to claws, read as Redacted. */
  readonly secret?: boolean
  /** A path: relative in config.env, it is taken from the home. */
  readonly path?: boolean
  /** An agent of `serve` may set it in its own config.env. */
  readonly perAgent?: boolean
  /** What config.env.example writes for it (commented out unless `exampleSet`); the default when not given. */
  readonly example?: string
  /** config.env.example sets it (empty), for the user to fill in. */
  readonly exampleSet?: boolean
  /** Read from the environment only, before config.env is found (config.env.example leaves it out). */
  readonly environmentOnly?: boolean
  /** How the default is shown when it is not a plain value. */
  readonly defaultText?: string
}

/** A whole number (`integer`) or a number of seconds (`seconds`, fractions allowed) within min–max. */
export interface NumberSetting extends Declared {
  readonly kind: "integer" | "seconds"
  readonly min: number
  readonly max: number
  /** Undefined: the owner works it out (defaultText says how). */
  readonly default: number | undefined
  /** A limit beyond the range, in words (`below HISTORY_MAX`). */
  readonly rangeNote?: string
}

/** `1`, `0`, `true` or `false`. */
export interface SwitchSetting extends Declared {
  readonly kind: "switch"
  readonly default: boolean
}

/** One of a few words. */
export interface ChoiceSetting extends Declared {
  readonly kind: "choice"
  readonly choices: ReadonlyArray<string>
  readonly default: string
}

/** Text its owner checks (`accepts` says what it takes); `default` is the text used when unset, if any. */
export interface TextSetting extends Declared {
  readonly kind: "text"
  readonly accepts: string
  readonly default?: string
}

export type Setting = NumberSetting | SwitchSetting | ChoiceSetting | TextSetting

export interface SettingGroup {
  readonly title: string
  readonly settings: ReadonlyArray<Setting>
}

/** The values a setting takes, in words: `1–100`, `0, 1, true, false`, `channel, user, server, one`, or its owner's words. */
export const accepts = (setting: Setting): string => {
  switch (setting.kind) {
    case "integer":
    case "seconds":
      return `${setting.min}–${setting.max}${setting.rangeNote === undefined ? "" : `, ${setting.rangeNote}`}`
    case "switch":
      return "0, 1, true, false"
    case "choice":
      return setting.choices.join(", ")
    case "text":
      return setting.accepts
  }
}

/** The value used when unset, as a user would write it; undefined when there is none to write. */
export const defaultValue = (setting: Setting): string | undefined =>
  setting.kind === "switch" ? (setting.default ? "1" : "0") : setting.default === undefined ? undefined : String(setting.default)

/** The default, in words. */
export const shownDefault = (setting: Setting): string => setting.defaultText ?? defaultValue(setting) ?? "(none)"
