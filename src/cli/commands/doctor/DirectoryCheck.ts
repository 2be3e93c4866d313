/**
 * Doctor's directory lines: the home in use and why (and a config.env of
 * ours passed over because its directory is no home), the memory directory (owner, mode, its files,
 * a soul or summary over its limit, free space), another run holding it (the run lock), and the runtime
 * directory with the same rules `planckclaw run` applies before laying out
 * its pipes (RuntimeDirChecks). Nothing is created, changed or removed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as ConfigErrors from "../../../config/ConfigErrors.js"
import * as Home from "../../../config/Home.js"
import { RunDir } from "../../../config/settings/Agent.js"
import { MemoryDir } from "../../../config/settings/Memory.js"
import { describeError } from "../../../runtime/Errors.js"
import { fifoPaths, fifoPathsConfig, pidFileName } from "../../../pipes/FifoPaths.js"
import { leftoverPipes, lstatOption, previousRun, useAnother } from "../../../pipes/RuntimeDirChecks.js"
import * as Layout from "../../../memory/Layout.js"
import * as PromptFiles from "../../../memory/PromptFiles.js"
import { MemoryConfig } from "../../../memory/MemoryDir.js"
import * as SafeFile from "../../../runtime/SafeFile.js"
import { runLockName } from "../../../memory/MemoryHold.js"
import { readPidFileSync } from "../../../runtime/process/PidFile.js"
import { heldBy } from "../../../runtime/process/PidLiveness.js"
import { fail, type Finding, formatBytes, pass } from "./DoctorCheck.js"

/** Below this, history appends may soon fail (replies are still sent, see Memory). */
export const lowSpaceBytes = 10 * 1024 * 1024

const octal = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, "0")

const settingsFailed = (subject: string) => (error: Parameters<typeof ConfigErrors.describe>[0]) =>
  Effect.succeed<ReadonlyArray<Finding>>([
    fail(subject, ConfigErrors.describe(error).replace(/^configuration error: /, ""), "fix that setting in config.env or the environment")
  ])

/** The nearest directory that exists on the way up from `dir`. */
const nearestExisting = (dir: string): string => {
  let at = dir
  while (!fs.existsSync(at) && path.dirname(at) !== at) at = path.dirname(at)
  return at
}

const writable = (dir: string): boolean =>
  Result.isSuccess(Result.try(() => fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK)))

const freeText = (dir: string): string => {
  const free = SafeFile.freeBytes(dir)
  return free === undefined ? "free space unknown" : `${formatBytes(free)} free`
}

/** A directory that does not exist yet: fine when a run can make it. */
const notYet = (subject: string, dir: string, setting: string): Finding => {
  const parent = nearestExisting(dir)
  return writable(parent)
    ? pass(subject, `${dir} does not exist yet; a run creates it (mode 0700; ${freeText(parent)})`)
    : fail(subject, `${dir} does not exist and ${parent} is not writable by this user`, `set ${setting} to a directory you can write`)
}

const uid = process.getuid?.()

const memoryDirectory = (dir: string): ReadonlyArray<Finding> => {
  const stat = Result.try(() => fs.statSync(dir, { throwIfNoEntry: false }))
  if (Result.isFailure(stat)) return [fail("memory", `cannot inspect ${dir}: ${describeError(stat.failure)}`, "set PLANCKCLAW_DIR to a directory you can use")]
  if (stat.success === undefined) return [notYet("memory", dir, MemoryDir.key)]
  if (!stat.success.isDirectory()) return [fail("memory", `${dir} is not a directory`, "set PLANCKCLAW_DIR to a directory")]
  const { mode } = stat.success
  if (uid !== undefined && stat.success.uid !== uid) {
    return [fail("memory", `${dir} is owned by uid ${stat.success.uid}, not by this user (uid ${uid})`, "use a directory of your own as PLANCKCLAW_DIR")]
  }
  if (!writable(dir)) return [fail("memory", `${dir} is not writable by this user (mode ${octal(mode)})`, `chmod u+rwx ${dir}`)]
  if ((mode & 0o022) !== 0) {
    return [fail("memory", `${dir} can be written by other users (mode ${octal(mode)})`, `chmod 700 ${dir}`)]
  }
  // The files a run writes must be regular files of this user, never links (SafeFile).
  const files = Layout.files(dir)
  const unsafe = [files.soul, ...Layout.written(files)].flatMap((file) => {
    const checked = SafeFile.check(file)
    return Result.isFailure(checked) ? [fail("memory", checked.failure.message, `move ${file} away or replace it by a regular file of yours`)] : []
  })
  // What a run refuses at start (PromptFiles): every request would carry it whole.
  const oversize = [files.soul, files.summary].flatMap((file) => {
    const size = PromptFiles.oversizeOf(file)
    return size === undefined ? [] : [fail("memory", PromptFiles.describeTooLarge(file, size), `shorten it to at most ${PromptFiles.LIMIT_TEXT}`)]
  })
  const refused = [...unsafe, ...oversize]
  const free = SafeFile.freeBytes(dir)
  if (free !== undefined && free < lowSpaceBytes) {
    return [...refused, fail("memory", `only ${formatBytes(free)} free on the disk of ${dir}`, "free some space: history cannot grow on a full disk")]
  }
  const readable = (mode & 0o044) !== 0 ? ", readable by others" : ""
  return refused.length > 0 ? refused : [pass("memory", `${dir} (yours, mode ${octal(mode)}${readable}; ${freeText(dir)})`)]
}

/** The home in use and why; a config.env of ours in the current directory that is not read fails. */
export const home: Effect.Effect<ReadonlyArray<Finding>> = Effect.sync(() => {
  const found = Home.locate()
  const file = Home.configFile(found)
  const settings = fs.existsSync(file) ? "" : "; no config.env there yet (`planckclaw init` makes one)"
  return [
    pass("home", `${found.dir} (${Home.why(found)})${settings}`),
    ...(found.passedOver === undefined ? [] : [
      fail("home", Home.passedOver(found.passedOver).problem, Home.passedOver(found.passedOver).remedy)
    ])
  ]
})

/** Another live run (or a serve with this agent started) holds the memory directory's run lock (MemoryHold). */
const runLock = (dir: string): Finding => {
  const lock = path.join(dir, runLockName)
  const owner = readPidFileSync(lock)
  if (owner !== undefined && heldBy(owner, lock)) {
    return fail(
      "other run",
      `a planckclaw run, or a serve running this agent (pid ${owner}), holds ${dir}`,
      "stop it before starting another run on this memory (compact and usage work beside it)"
    )
  }
  const stale = fs.existsSync(lock) ? `; the stale lock of ${owner === undefined ? "an unknown process" : `pid ${owner}`} will be taken over` : ""
  return pass("other run", `no other run holds ${dir}${stale}`)
}

export const memory: Effect.Effect<ReadonlyArray<Finding>> = Effect.map(
  MemoryConfig,
  (dir) => [...memoryDirectory(dir), runLock(dir)]
).pipe(Effect.catchTag("ConfigError", settingsFailed("memory")))

/** The runtime directory as `planckclaw run` would find it (see RuntimeDir.makeRuntimeDir). */
export const runtime: Effect.Effect<ReadonlyArray<Finding>> = Effect.gen(function*() {
  const { runDir } = yield* fifoPathsConfig
  const paths = fifoPaths(runDir)
  const dir = paths.runDir
  const found = yield* lstatOption(dir)
  if (Option.isNone(found)) return [notYet("runtime", dir, RunDir.key)]
  const stat = found.value
  if (stat.isSymbolicLink()) return [fail("runtime", `${dir} is a symbolic link; a run refuses it`, useAnother)]
  if (!stat.isDirectory()) return [fail("runtime", `${dir} is not a directory`, useAnother)]
  if (uid !== undefined && stat.uid !== uid) {
    return [fail("runtime", `${dir} is owned by uid ${stat.uid}, not by this user (uid ${uid})`, useAnother)]
  }
  if ((stat.mode & 0o077) !== 0) {
    return [
      fail("runtime", `${dir} is open to other users (mode ${octal(stat.mode)}); a run refuses it`, `chmod 700 ${dir}, or ${useAnother}`)
    ]
  }
  const dead = yield* previousRun(dir, path.join(dir, pidFileName))
  yield* leftoverPipes(paths, Option.isSome(dead))
  const leftovers = Option.isSome(dead) ? `; a run removes what pid ${dead.value} left` : ""
  return [pass("runtime", `${dir} (yours, mode ${octal(stat.mode)}${leftovers}; ${freeText(dir)})`)]
}).pipe(
  Effect.catchTag("RuntimeDirError", (error) => Effect.succeed<ReadonlyArray<Finding>>([fail("runtime", error.message)])),
  Effect.catchTag("ConfigError", settingsFailed("runtime"))
)
