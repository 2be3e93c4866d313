/**
 * The home: the directory holding `config.env`, `memory/`, `claws/` and
 * `agents/`. `PLANCKCLAW_HOME` names it; without it, the current directory
 * when it is a PlanckClaw home (its `config.env` beside a `memory/`,
 * `claws/` or `agents/` directory: what `planckclaw init` makes, or a
 * checkout), else `~/.planckclaw`, so an installed or linked command works
 * from anywhere. A `config.env` alone does not make a home: any folder may
 * hold one for some other program, and taking it would start a fresh
 * memory there with no claws.
 *
 * Relative paths in config.env are relative to the home; relative paths in
 * the environment or on the command line stay relative to the current
 * directory, as a shell user expects.
 *
 * Each home has a runtime directory of its own for the pipes of its run, so
 * two homes can run at once: the default home keeps the original's
 * `/tmp/planckclaw` (the original's scripts use it), any other home a
 * private one under the temporary directory named after it (runDirFor).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Result from "effect/Result"
import * as Settings from "./settings/All.js"
import { RunDir } from "./settings/Agent.js"
import { BrainChoice } from "./settings/Brain.js"
import { ClawsDir, McpConfig } from "./settings/Claws.js"
import { PlanckclawHome } from "./settings/Home.js"
import { MemoryDir } from "./settings/Memory.js"
import { AgentsDir } from "./settings/Serve.js"

export interface Home {
  readonly dir: string
  /** How it was found, for messages: `PLANCKCLAW_HOME`, the current directory, or the default. */
  readonly foundBy: typeof PlanckclawHome.key | "current directory" | "default"
  /**
   * The default was taken although the current directory holds a config.env
   * that sets keys of ours: that file, which is not read (the directory is
   * no home: nothing of a home beside it).
   */
  readonly passedOver?: string
}

export const HOME_VARIABLE = PlanckclawHome.key

/** The directories beside config.env that make a folder a PlanckClaw home. */
export const homeParts = ["memory", "claws", "agents"] as const

const isDirectory = (file: string): boolean => fs.statSync(file, { throwIfNoEntry: false })?.isDirectory() === true

/** Anything at `file`, even a link to nothing; false when it cannot even be looked at. */
export const present = (file: string): boolean =>
  Result.getOrElse(Result.try(() => fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined), () => false)

/**
 * Whether `dir` is a PlanckClaw home: its config.env beside a memory/, claws/
 * or agents/ directory. A config.env that is a link to nothing counts: the
 * user meant this home, and reading it then says what is wrong.
 */
export const isHome = (dir: string): boolean =>
  present(path.join(dir, "config.env")) && homeParts.some((part) => isDirectory(path.join(dir, part)))

// A line that sets one of our keys (`export` optional): the file was meant for planckclaw.
const ourKey = /^[ \t]*(?:export[ \t]+)?(?:PLANCKCLAW_|ANTHROPIC_|OPENAI_|DISCORD_|HISTORY_|CLAWS_DIR\b)/m

// Unreadable (absent, a directory, a link to nothing): it sets nothing.
const setsOurKeys = (file: string): boolean =>
  Result.getOrElse(Result.try(() => ourKey.test(fs.readFileSync(file, "utf8"))), () => false)

/** `~/.planckclaw`: the home of a user who names none. */
export const defaultHomeDir = (): string => path.join(os.homedir(), ".planckclaw")

export const locate = (
  environment: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd()
): Home => {
  const named = environment[HOME_VARIABLE]
  if (named !== undefined && named.trim() !== "") return { dir: path.resolve(cwd, named), foundBy: PlanckclawHome.key }
  if (isHome(cwd)) return { dir: cwd, foundBy: "current directory" }
  const here = path.join(cwd, "config.env")
  const passedOver = setsOurKeys(here) ? { passedOver: here } : {}
  return { dir: defaultHomeDir(), foundBy: "default", ...passedOver }
}

export const configFile = (home: Home): string => path.join(home.dir, "config.env")

/** The original's runtime directory, which the default home keeps. */
export const originalRunDir = "/tmp/planckclaw"

/** `dir` with its symbolic links resolved when it exists, so one home has one name. */
const canonical = (dir: string): string => Result.getOrElse(Result.try(() => fs.realpathSync(dir)), () => path.resolve(dir))

/** FNV-1a of `text`, base 36: a short, stable tag (a start loads no node:crypto for it). */
const shortHash = (text: string): string => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(36)
}

/**
 * The runtime directory a run of this home lays its pipes in when
 * PLANCKCLAW_RUN_DIR is unset: `/tmp/planckclaw` for the default home
 * (~/.planckclaw), else `planckclaw-<name>-<tag>` in the temporary
 * directory (TMPDIR), the tag a hash of the home's path, so two homes
 * never share one.
 */
export const runDirFor = (home: Home, tmpdir: string = os.tmpdir()): string => {
  const dir = canonical(home.dir)
  if (dir === canonical(defaultHomeDir())) return originalRunDir
  const name = path.basename(dir).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 24)
  return path.join(tmpdir, `planckclaw-${name === "" ? "home" : name}-${shortHash(dir)}`)
}

/** Where each directory lives when its setting is unset: inside the home, and the home's runtime directory. */
export const directoryDefaults = (home: Home): Map<string, string> =>
  new Map([
    [MemoryDir.key, path.join(home.dir, "memory")],
    [ClawsDir.key, path.join(home.dir, "claws")],
    [McpConfig.key, path.join(home.dir, "mcp.json")],
    [AgentsDir.key, path.join(home.dir, "agents")],
    [RunDir.key, runDirFor(home)]
  ])

/** Settings whose value is a path; PLANCKCLAW_BRAIN only when it names an executable (`./my_brain.sh`). */
const pathKeys: ReadonlySet<string> = new Set(Settings.pathKeys)

const isPath = (key: string, value: string): boolean =>
  pathKeys.has(key) || (key === BrainChoice.key && value.includes("/"))

/** config.env's values with its relative paths made absolute against the home. */
export const resolveFilePaths = (home: Home, values: ReadonlyMap<string, string>): Map<string, string> =>
  new Map([...values].map(([key, value]) => [key, isPath(key, value) && value !== "" ? path.resolve(home.dir, value) : value]))

/** Why this home is the one in use, for the start's line and doctor's. */
export const why = (home: Home): string =>
  home.foundBy === PlanckclawHome.key
    ? "from PLANCKCLAW_HOME"
    : home.foundBy === "current directory"
    ? "the current directory, a PlanckClaw home"
    : "the default home"

/** What is wrong with a config.env of ours in a directory that is no home, and what to do. */
export const passedOver = (file: string): { readonly problem: string; readonly remedy: string } => ({
  problem: `${file} is not read: its directory is no PlanckClaw home (no memory/, claws/ or agents/ beside it)`,
  remedy: `\`planckclaw init ${path.dirname(file)}\` makes it one, or set PLANCKCLAW_HOME`
})

export const passedOverText = (file: string): string => {
  const { problem, remedy } = passedOver(file)
  return `${problem}; ${remedy}`
}

/** How a message tells the user where settings are read from. */
export const describe = (home: Home): string =>
  home.foundBy === PlanckclawHome.key
    ? `${configFile(home)}, from PLANCKCLAW_HOME`
    : home.foundBy === "current directory"
    ? `${configFile(home)}, in the current directory`
    : `${configFile(home)}, the default home (PLANCKCLAW_HOME or a directory holding a home's config.env and memory/ picks another)`
