/**
 * Every configuration key, for `planckclaw help config`: its default, its
 * range and what it does, as declared once in src/config/settings/ (the
 * same declarations build each setting's Config). Plain data, importing no
 * Effect: `bin/planckclaw` renders it without loading the agent.
 */
import { accepts, shownDefault } from "../config/Setting.js"
import { groups } from "../config/settings/All.js"

export interface KeyHelp {
  readonly key: string
  readonly default: string
  /** The values accepted: a numeric range `min–max`, a list of words, or a kind of value. */
  readonly range: string
  readonly meaning: string
}

export interface KeySection {
  readonly title: string
  readonly keys: ReadonlyArray<KeyHelp>
}

export const keySections: ReadonlyArray<KeySection> = groups.map((group) => ({
  title: group.title,
  keys: group.settings.map((setting) => ({
    key: setting.key,
    default: shownDefault(setting),
    range: accepts(setting),
    meaning: setting.description
  }))
}))

export const allKeys: ReadonlyArray<KeyHelp> = keySections.flatMap((section) => section.keys)
