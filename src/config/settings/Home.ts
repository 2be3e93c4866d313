/** The home: where config.env, memory/, claws/ and agents/ are found (config/Home.ts reads it). */
import type { TextSetting } from "../Setting.js"

export const PlanckclawHome = {
  key: "PLANCKCLAW_HOME",
  kind: "text",
  accepts: "directory (environment only)",
  defaultText: "the current directory if it is a home (config.env beside memory/, claws/ or agents/), else ~/.planckclaw",
  description: "where config.env, memory/, claws/ and agents/ are found",
  details: "see [The home](#the-home)",
  environmentOnly: true
} as const satisfies TextSetting

export const group = { title: "Home", settings: [PlanckclawHome] } as const
