/**
 * config.env.example and the key tables of docs/configuration.md, rendered
 * from the declarations (src/config/settings/). `npm run gen:settings`
 * writes them (build/gen-settings.mjs); test/config/Settings.test.ts renders
 * them again and fails when a file differs. Plain data, no Effect.
 */
import { accepts, defaultValue, type Setting, type SettingGroup } from "./Setting.js"
import { groups, perAgentKeys } from "./settings/All.js"

const declaredGroups: ReadonlyArray<SettingGroup> = groups

/** `text` in lines of at most `width` characters, each starting with `prefix`. */
const wrapped = (text: string, prefix: string, width = 100): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((part) => part !== "")) {
    if (line !== "" && prefix.length + line.length + 1 + word.length > width) {
      lines.push(prefix + line)
      line = word
    } else line = line === "" ? word : `${line} ${word}`
  }
  return line === "" ? lines : [...lines, prefix + line]
}

const exampleHeader = [
  "# PlanckClaw settings: config.env in the home (`planckclaw init` writes this",
  "# file there; `planckclaw help config` lists every key with its range).",
  "# The home is PLANCKCLAW_HOME, else the current directory if it holds",
  "# config.env beside memory/, claws/ or agents/, else ~/.planckclaw.",
  "# Precedence: config.env < environment variables < command-line flags.",
  "# Lines are shell style: export KEY=\"value\" (export optional), 'single' or",
  "# \"double\" quotes, # comments, $VAR and ${VAR} from the environment and",
  "# earlier lines. $(...) and backticks are refused, never run.",
  "# Empty values count as unset; relative paths are relative to the home.",
  "# Generated from the declarations in src/config/settings/ (npm run gen:settings)."
]

const exampleEntry = (setting: Setting): Array<string> => {
  const value = setting.example ?? defaultValue(setting) ?? ""
  return [
    ...wrapped(setting.description, "# "),
    ...wrapped(`accepts: ${accepts(setting)}`, "#   "),
    `${setting.exampleSet === true ? "" : "# "}export ${setting.key}="${value}"`
  ]
}

/** config.env.example: every setting read from config.env, commented out with its default, in its group. */
export const configEnvExample = (): string =>
  [
    ...exampleHeader,
    ...declaredGroups.flatMap((group) => {
      const settings = group.settings.filter((setting) => setting.environmentOnly !== true)
      return settings.length === 0 ? [] : ["", `# --- ${group.title} ---`, ...settings.flatMap(exampleEntry)]
    })
  ].join("\n") + "\n"

const cell = (text: string): string => text.replace(/\|/g, "\\|")

const code = (text: string): string => `\`${text}\``

const meaning = (setting: Setting): string =>
  setting.details === undefined
    ? setting.description
    : `${setting.description}${/^[A-Z]/.test(setting.details) ? ". " : "; "}${setting.details}`

const row = (setting: Setting): string => {
  const value = defaultValue(setting)
  const shown = setting.defaultText ?? (value === undefined ? "(none)" : code(value))
  return `| ${code(setting.key)} | ${cell(shown)} | ${cell(accepts(setting))} | ${cell(meaning(setting))} |`
}

export const referenceBegin = "<!-- Generated from src/config/settings/ by `npm run gen:settings`: edit the declarations, not this part. -->"
export const referenceEnd = "<!-- End of the generated part. -->"

/** The generated part of docs/configuration.md: every key's table, by group, and the keys an agent may set. */
export const referenceTables = (): string =>
  [
    referenceBegin,
    "",
    "## Every key",
    "",
    "`planckclaw help config` prints the same keys in the same groups;",
    "`config.env.example`, which `init` writes as `config.env`, has each one",
    "commented.",
    ...declaredGroups.flatMap((group) => [
      "",
      `### ${group.title}`,
      "",
      "| Key | Default | Range | Meaning |",
      "|---|---|---|---|",
      ...group.settings.map(row)
    ]),
    "",
    "## An agent's own settings",
    "",
    ...wrapped(
      "An agent of `serve` may have a `config.env` of its own in its directory, with only the subset that can " +
        `differ between agents: ${perAgentKeys.map(code).join(", ")} (any other key there is refused, naming it).`,
      "",
      76
    ),
    "",
    referenceEnd
  ].join("\n")

/** `page` with its generated part replaced by `referenceTables()`; undefined when the page has no markers. */
export const withReferenceTables = (page: string): string | undefined => {
  const begin = page.indexOf(referenceBegin)
  const end = page.indexOf(referenceEnd)
  return begin === -1 || end < begin ? undefined : page.slice(0, begin) + referenceTables() + page.slice(end + referenceEnd.length)
}
