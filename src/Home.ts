/**
 * The home: the directory holding `config.env`, `memory/`, `claws/` and
 * `agents/`. `PLANCKCLAW_HOME` names it; without it, the current directory
 * when it holds a `config.env` (a checkout, a project-local agent), else
 * `~/.planckclaw`, so an installed or linked command works from anywhere.
 *
 * Relative paths in config.env are relative to the home; relative paths in
 * the environment or on the command line stay relative to the current
 * directory, as a shell user expects.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export interface Home {
  readonly dir: string
  /** How it was found, for messages: `PLANCKCLAW_HOME`, the current directory, or the default. */
  readonly foundBy: "PLANCKCLAW_HOME" | "current directory" | "default"
}

export const HOME_VARIABLE = "PLANCKCLAW_HOME"

export const locate = (
  environment: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd()
): Home => {
  const named = environment[HOME_VARIABLE]
  if (named !== undefined && named.trim() !== "") return { dir: path.resolve(cwd, named), foundBy: "PLANCKCLAW_HOME" }
  if (fs.existsSync(path.join(cwd, "config.env"))) return { dir: cwd, foundBy: "current directory" }
  return { dir: path.join(os.homedir(), ".planckclaw"), foundBy: "default" }
}

export const configFile = (home: Home): string => path.join(home.dir, "config.env")

/** Where each directory lives when its setting is unset: inside the home. */
export const directoryDefaults = (home: Home): Map<string, string> =>
  new Map([
    ["PLANCKCLAW_DIR", path.join(home.dir, "memory")],
    ["CLAWS_DIR", path.join(home.dir, "claws")],
    ["PLANCKCLAW_AGENTS_DIR", path.join(home.dir, "agents")]
  ])

/** Settings whose value is a path; PLANCKCLAW_BRAIN only when it names an executable (`./my_brain.sh`). */
const pathKeys = new Set(["PLANCKCLAW_DIR", "CLAWS_DIR", "PLANCKCLAW_AGENTS_DIR", "PLANCKCLAW_RUN_DIR", "PLANCKCLAW_PRICES"])

const isPath = (key: string, value: string): boolean =>
  pathKeys.has(key) || (key === "PLANCKCLAW_BRAIN" && value.includes("/"))

/** config.env's values with its relative paths made absolute against the home. */
export const resolveFilePaths = (home: Home, values: ReadonlyMap<string, string>): Map<string, string> =>
  new Map([...values].map(([key, value]) => [key, isPath(key, value) && value !== "" ? path.resolve(home.dir, value) : value]))

/** How a message tells the user where settings are read from. */
export const describe = (home: Home): string =>
  home.foundBy === "PLANCKCLAW_HOME"
    ? `${configFile(home)}, from PLANCKCLAW_HOME`
    : home.foundBy === "current directory"
    ? `${configFile(home)}, in the current directory`
    : `${configFile(home)}, the default home (PLANCKCLAW_HOME or a directory holding config.env picks another)`
