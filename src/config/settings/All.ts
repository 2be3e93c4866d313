/**
 * Every setting, in the groups `help config`, config.env.example and
 * docs/configuration.md show them in. Plain data (see ../Setting.ts).
 */
import type { Setting, SettingGroup } from "../Setting.js"
import * as Agent from "./Agent.js"
import * as Brain from "./Brain.js"
import * as Claws from "./Claws.js"
import * as Cluster from "./Cluster.js"
import * as Discord from "./Discord.js"
import * as Home from "./Home.js"
import * as Memory from "./Memory.js"
import * as Schedule from "./Schedule.js"
import * as Serve from "./Serve.js"

export const groups = [Home.group, Brain.group, Memory.group, Claws.group, Agent.group, Discord.group, Serve.group, Cluster.group, Schedule.group] as const

type Declared = (typeof groups)[number]["settings"][number]

/** Every key, declared. */
export type SettingKey = Declared["key"]

/** The keys of the secrets: read as Redacted, never logged, never passed to a child. */
export type SecretKey = Extract<Declared, { readonly secret: true }>["key"]

export const all: ReadonlyArray<Setting> = (groups as ReadonlyArray<SettingGroup>).flatMap((group) => group.settings)

export const secretKeys = all.flatMap((setting) => setting.secret === true ? [setting.key as SecretKey] : [])

/** The keys an agent's own config.env may set: no secrets, no paths. */
export const perAgentKeys = all.flatMap((setting) => setting.perAgent === true ? [setting.key] : [])

/** Settings whose value is a path (relative in config.env: from the home). */
export const pathKeys = all.flatMap((setting) => setting.path === true ? [setting.key] : [])
