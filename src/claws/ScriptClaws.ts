/**
 * Claws from shell scripts: every `CLAWS_DIR/*.sh` declares its tools on
 * `#TOOLS:` lines and is run as a child process to call one.
 *
 * Discovery runs before every message, so it stats each file and re-reads
 * only those whose identity (inode, size, mtime) changed since the last
 * `list`; adding, editing or removing a claw shows on the very next `list`.
 *
 * A call runs `CLAW NAME INPUT_JSON` with stdin on /dev/null, in a fresh
 * private directory removed after the call (not the agent's working
 * directory, where config.env and its secrets live), with the agent's
 * environment minus its secrets. The result never ends with
 * whitespace: trailing newlines are trimmed so a result cannot end in the
 * empty line that frames answers on the claw FIFO.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Arr from "effect/Array"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import {
  Claws,
  type ClawsService,
  type ToolCatalog,
  ToolDefinition,
  type ToolProblem,
  type ToolResult,
  unknownTool
} from "../Claws.js"
import { integerIn, secondsIn } from "../config/ConfigRange.js"
import { isSecretName, secretNames } from "../config/Secrets.js"
import * as ChildProcess from "../process/ChildProcess.js"

/** Seconds before a claw's whole process group is killed; also read by the agent's patience on the claw pipes (Bridges). */
export const ClawTimeoutConfig = secondsIn("PLANCKCLAW_CLAW_TIMEOUT", { min: 0.1, max: 86_400 }, 30)

export const ScriptsConfig = Config.all({
  directory: Config.string("CLAWS_DIR").pipe(
    Config.validate({ message: "must not be empty", validation: (dir) => dir.length > 0 }),
    Config.withDefault("./claws")
  ),
  timeout: ClawTimeoutConfig.pipe(Config.map(Duration.seconds)),
  // Past 1 MiB a result would crowd out the conversation anyway.
  outputMax: integerIn("PLANCKCLAW_CLAW_OUTPUT_MAX", { min: 1, max: 1024 * 1024 }, 16_384),
  /** Values no child may inherit, whatever variable they hide in. */
  withheldSecrets: Config.all(secretNames.map((name) => Config.option(Config.redacted(name)))).pipe(
    Config.map(Arr.getSomes)
  )
})
export type ScriptsConfig = Config.Config.Success<typeof ScriptsConfig>

const toolsPrefix = "#TOOLS:"
const stderrExcerptMax = 2048
const floodAllowance = 1024 * 1024
/**
 * A file modified this recently may be edited again within the filesystem's
 * timestamp granularity without its identity changing (same size, same
 * mtime), so it is re-read until it is older than this.
 */
const settleMillis = 2000

// ---------------------------------------------------------------------------
// Discovery

interface Declaration {
  readonly tool: ToolDefinition
  readonly source: string
}

interface ParsedFile {
  readonly declarations: ReadonlyArray<Declaration>
  readonly problems: ReadonlyArray<ToolProblem>
}

/** What one claw declared, with the identity of the file version it came from. */
interface CachedFile extends ParsedFile {
  readonly path: string
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number
  /** False for versions that must be re-read: unreadable, or modified too recently to trust the mtime. */
  readonly settled: boolean
}

interface Catalog extends ToolCatalog {
  /** Tool name to the absolute path of the claw that declares it. */
  readonly files: ReadonlyMap<string, string>
}

const decodeTool = Schema.decodeUnknownEither(ToolDefinition)

const errorText = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** Reads every `#TOOLS:` line of one claw; a bad line never hides the good ones. */
const parseClawFile = (displayPath: string, text: string): ParsedFile => {
  const declarations: Array<Declaration> = []
  const problems: Array<ToolProblem> = []
  if (!text.includes(toolsPrefix)) return { declarations, problems }
  text.split("\n").forEach((line, index) => {
    if (!line.startsWith(toolsPrefix)) return
    const source = `${displayPath}:${index + 1}`
    const parsed = Either.try(() => JSON.parse(line.slice(toolsPrefix.length)) as unknown)
    if (Either.isLeft(parsed)) {
      problems.push({ source, reason: `invalid JSON after #TOOLS: (${errorText(parsed.left)})` })
      return
    }
    const items = Array.isArray(parsed.right) ? parsed.right : [parsed.right]
    items.forEach((item, position) => {
      const decoded = decodeTool(item)
      if (Either.isRight(decoded)) {
        declarations.push({ tool: decoded.right, source })
      } else {
        const where = Array.isArray(parsed.right) ? `item ${position + 1}: ` : ""
        problems.push({
          source,
          reason: `${where}invalid tool definition: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`
        })
      }
    })
  })
  return { declarations, problems }
}

const unreadable = (path: string, displayPath: string, reason: string): CachedFile => ({
  declarations: [],
  problems: [{ source: displayPath, reason }],
  path,
  ino: -1,
  size: -1,
  mtimeMs: -1,
  settled: false
})

/**
 * Discovery with a per-file cache. Synchronous file calls on purpose: a
 * `stat` costs a few microseconds this way, far less than a round trip
 * through the libuv thread pool, and the pool is left to the FIFOs.
 */
const makeDiscovery = (directory: string) => {
  const absoluteDir = Path.resolve(directory)
  let cache = new Map<string, CachedFile>()
  let last: Catalog | undefined

  const load = (name: string, path: string): CachedFile => {
    const stat = Either.try(() => Fs.statSync(path, { throwIfNoEntry: false }))
    const cached = cache.get(name)
    if (
      Either.isRight(stat) && stat.right !== undefined && cached !== undefined && cached.settled &&
      cached.ino === stat.right.ino && cached.size === stat.right.size && cached.mtimeMs === stat.right.mtimeMs
    ) {
      return cached
    }
    const displayPath = Path.join(directory, name)
    if (Either.isLeft(stat)) return unreadable(path, displayPath, `cannot read: ${errorText(stat.left)}`)
    if (stat.right === undefined) {
      return unreadable(path, displayPath, "cannot read: ENOENT (vanished, or a dangling symlink)")
    }
    if (!stat.right.isFile()) return unreadable(path, displayPath, "cannot read: not a regular file")
    const { ino, mtimeMs, size } = stat.right
    const text = Either.try(() => Fs.readFileSync(path, "utf8"))
    if (Either.isLeft(text)) {
      // Not settled: a permission fix changes neither size nor mtime.
      return unreadable(path, displayPath, `cannot read: ${errorText(text.left)}`)
    }
    // Date.now, not Clock: it is compared with the filesystem's wall-clock mtime.
    const settled = Date.now() - mtimeMs > settleMillis
    return { ...parseClawFile(displayPath, text.right), path, ino, size, mtimeMs, settled }
  }

  const merge = (files: Iterable<CachedFile>): Catalog => {
    const tools: Array<ToolDefinition> = []
    const problems: Array<ToolProblem> = []
    const paths = new Map<string, string>()
    const firstSource = new Map<string, string>()
    for (const file of files) {
      problems.push(...file.problems)
      for (const declaration of file.declarations) {
        const earlier = firstSource.get(declaration.tool.name)
        if (earlier !== undefined) {
          problems.push({
            source: declaration.source,
            reason: `tool "${declaration.tool.name}" is already declared at ${earlier}; the first declaration wins`
          })
          continue
        }
        firstSource.set(declaration.tool.name, declaration.source)
        paths.set(declaration.tool.name, file.path)
        tools.push(declaration.tool)
      }
    }
    return { tools, problems, files: paths }
  }

  // The listing is read again only when the directory changed (adding,
  // removing or renaming a claw changes its mtime), or changed too recently
  // to trust its mtime, as for files.
  let listed: { readonly ino: number; readonly mtimeMs: number; readonly names: ReadonlyArray<string> } | undefined

  const claimNames = (): Either.Either<ReadonlyArray<string>, unknown> => {
    const dirStat = Either.try(() => Fs.statSync(absoluteDir))
    if (
      Either.isRight(dirStat) && listed !== undefined && listed.ino === dirStat.right.ino &&
      listed.mtimeMs === dirStat.right.mtimeMs && Date.now() - dirStat.right.mtimeMs > settleMillis
    ) {
      return Either.right(listed.names)
    }
    return Either.map(Either.try(() => Fs.readdirSync(absoluteDir)), (entries) => {
      // Like the shell glob `*.sh` (no hidden files, no recursion), sorted by
      // UTF-16 code units, which for ASCII names is the `LC_ALL=C` order.
      const names = entries.filter((name) => name.endsWith(".sh") && !name.startsWith(".")).sort()
      listed = Either.isRight(dirStat) ? { ino: dirStat.right.ino, mtimeMs: dirStat.right.mtimeMs, names } : undefined
      return names
    })
  }

  const scan = (): Catalog => {
    const entries = claimNames()
    if (Either.isLeft(entries)) {
      cache = new Map()
      last = undefined
      return {
        tools: [],
        problems: [{ source: directory, reason: `cannot read the claws directory: ${errorText(entries.left)}` }],
        files: new Map()
      }
    }
    const names = entries.right
    const next = new Map<string, CachedFile>()
    let changed = last === undefined || names.length !== cache.size
    for (const name of names) {
      const file = load(name, `${absoluteDir}${Path.sep}${name}`)
      if (file !== cache.get(name)) changed = true
      next.set(name, file)
    }
    cache = next
    if (changed || last === undefined) last = merge(next.values())
    return last
  }

  return { scan }
}

// ---------------------------------------------------------------------------
// Calls

/** The agent's environment minus its secrets, by name and by value. */
const childEnvironment = (withheld: ReadonlyArray<Redacted.Redacted<string>>): Record<string, string> => {
  const secretValues = new Set(
    [...secretNames.map((name) => process.env[name]), ...withheld.map(Redacted.value)].filter(
      (value): value is string => value !== undefined && value !== ""
    )
  )
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !isSecretName(key) && !secretValues.has(value)) env[key] = value
  }
  return env
}

const describeJsonType = (input: unknown): string =>
  input === null ? "null" : Array.isArray(input) ? "an array" : `a ${typeof input}`

const isJsonObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const isExecutable = (path: string): boolean => Either.isRight(Either.try(() => Fs.accessSync(path, Fs.constants.X_OK)))

/** Drops a multi-byte UTF-8 sequence cut short by the output cap. */
const dropIncompleteTail = (bytes: Uint8Array): Uint8Array => {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back] ?? 0
    if ((byte & 0xc0) === 0x80) continue // continuation byte: keep looking for the lead
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return length > back ? bytes.subarray(0, bytes.length - back) : bytes
  }
  return bytes
}

// Invalid UTF-8 becomes U+FFFD rather than an error.
const utf8 = new TextDecoder("utf-8", { fatal: false })

const formatOutcome = (name: string, outcome: ChildProcess.RunOutcome, outputMax: number): ToolResult => {
  const stdout = utf8.decode(outcome.stdoutTruncated ? dropIncompleteTail(outcome.stdout) : outcome.stdout).trimEnd()
  const truncation = outcome.stdoutTruncated ? `\n[output truncated at ${outputMax} bytes]` : ""
  // The group was killed by us for flooding: its exit status says nothing about the tool.
  if (outcome.flooded || outcome.exitCode === 0) {
    // An empty result would be an empty frame on the claw FIFO and says nothing to the model.
    return { content: stdout === "" && truncation === "" ? "(no output)" : `${stdout}${truncation}`, isError: false }
  }
  const stderr = utf8.decode(outcome.stderrTruncated ? dropIncompleteTail(outcome.stderr) : outcome.stderr).trim()
  const status = outcome.exitCode !== null
    ? `[tool ${name} exited with code ${outcome.exitCode}]`
    : `[tool ${name} was killed by ${outcome.signal ?? "a signal"}]`
  const parts = [
    stdout === "" ? "" : `${stdout}${truncation}`,
    stderr === "" ? "" : `stderr: ${stderr}${outcome.stderrTruncated ? " […]" : ""}`,
    status
  ]
  return { content: parts.filter((part) => part !== "").join("\n"), isError: true }
}

export const make = (config: ScriptsConfig): Effect.Effect<ClawsService> =>
  Effect.sync(() => {
    const discovery = makeDiscovery(config.directory)
    let reported = new Set<string>()

    const list: Effect.Effect<Catalog> = Effect.gen(function*() {
      const catalog = yield* Effect.sync(discovery.scan)
      // Warn about a problem once while it lasts, not on every message.
      const current = new Set(catalog.problems.map((problem) => `${problem.source}\u0000${problem.reason}`))
      for (const problem of catalog.problems) {
        if (!reported.has(`${problem.source}\u0000${problem.reason}`)) {
          yield* Effect.logWarning(`claw problem at ${problem.source}: ${problem.reason}`)
        }
      }
      reported = current
      return catalog
    })

    const run = (name: string, file: string, inputJson: string): Effect.Effect<ToolResult> =>
      Effect.suspend(() => {
        // A claw without the execute bit is still a shell script: run it with sh,
        // as the README's "drop a file in claws/" promises.
        const executable = isExecutable(file)
        const request = (cwd: string): ChildProcess.RunRequest => ({
          command: executable ? file : "/bin/sh",
          args: executable ? [name, inputJson] : [file, name, inputJson],
          cwd,
          env: childEnvironment(config.withheldSecrets),
          stdoutMax: config.outputMax,
          stderrMax: stderrExcerptMax,
          floodAllowance
        })
        // The directory outlives the process group: `run` returns (or is
        // interrupted by the timeout) only once the group is killed and reaped.
        return ChildProcess.privateDirectory("planckclaw-claw-").pipe(
          Effect.flatMap((cwd) => ChildProcess.run(request(cwd)).pipe(Effect.timeoutOption(config.timeout))),
          Effect.scoped,
          Effect.map(Option.match({
            onNone: (): ToolResult => ({
              content: `Tool ${name} timed out after ${Duration.format(config.timeout)}`,
              isError: true
            }),
            onSome: (outcome) => formatOutcome(name, outcome, config.outputMax)
          })),
          Effect.catchTag("SpawnError", (error) => {
            // The input travels as one argv string, which Linux caps at 128 KiB.
            const reason = (error.cause as NodeJS.ErrnoException | undefined)?.code === "E2BIG"
              ? "its input is too large to pass as a command-line argument"
              : error.message
            return Effect.logWarning(`claw ${name} could not be started: ${error.message}`).pipe(
              Effect.as<ToolResult>({ content: `Tool ${name} could not be started: ${reason}`, isError: true })
            )
          })
        )
      })

    const call = (name: string, input: unknown): Effect.Effect<ToolResult> =>
      Effect.gen(function*() {
        const catalog = yield* list
        const file = catalog.files.get(name)
        if (file === undefined) return unknownTool(name)
        if (!isJsonObject(input)) {
          return { content: `Tool ${name}: input must be a JSON object, got ${describeJsonType(input)}`, isError: true }
        }
        const inputJson = Either.try(() => JSON.stringify(input))
        if (Either.isLeft(inputJson)) {
          return { content: `Tool ${name}: input cannot be encoded as JSON (${errorText(inputJson.left)})`, isError: true }
        }
        return yield* run(name, file, inputJson.right)
      })

    const service: ClawsService = {
      list: Effect.map(list, ({ problems, tools }): ToolCatalog => ({ tools, problems })),
      call
    }
    return service
  })

export const layer: Layer.Layer<Claws, ConfigError.ConfigError> = Layer.effect(Claws, Effect.flatMap(ScriptsConfig, make))
