/**
 * Finding the claws: every `CLAWS_DIR/*.sh` declares its tools on
 * `#TOOLS:` lines. Discovery runs before every message, so it stats each
 * file and re-reads only those whose identity (inode, size, mtime) changed
 * since the last scan; adding, editing or removing a claw shows on the very
 * next scan.
 *
 * With `watch()` running, a scan stats only the directory and the files the
 * watcher named since the last scan (plus recently modified files and
 * symlinks, whose targets it cannot see); the full stat scan stays the
 * fallback: before the watcher is up, after any watcher error or event
 * without a name, when the directory itself changed identity, and at least
 * every `fullScanMillis`, for what inotify misses (a full event queue, a
 * network filesystem, an edit through a hard link elsewhere).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type ToolCatalog, ToolDefinition, type ToolProblem } from "../Claws.js"
import { describeError } from "../Errors.js"

const toolsPrefix = "#TOOLS:"
/**
 * A file modified this recently may be edited again within the filesystem's
 * timestamp granularity without its identity changing (same size, same
 * mtime), so it is re-read until it is older than this.
 */
const settleMillis = 2000
/** The longest a watched discovery goes without a full stat scan. */
const fullScanMillis = 5000

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

export interface Catalog extends ToolCatalog {
  /** Tool name to the absolute path of the claw that declares it. */
  readonly files: ReadonlyMap<string, string>
}

const decodeTool = Schema.decodeUnknownEither(ToolDefinition)

/** Reads every `#TOOLS:` line of one claw; a bad line never hides the good ones. */
export const parseClawFile = (displayPath: string, text: string): ParsedFile => {
  const declarations: Array<Declaration> = []
  const problems: Array<ToolProblem> = []
  if (!text.includes(toolsPrefix)) return { declarations, problems }
  text.split("\n").forEach((line, index) => {
    if (!line.startsWith(toolsPrefix)) return
    const source = `${displayPath}:${index + 1}`
    const parsed = Either.try(() => JSON.parse(line.slice(toolsPrefix.length)) as unknown)
    if (Either.isLeft(parsed)) {
      problems.push({ source, reason: `invalid JSON after #TOOLS: (${describeError(parsed.left)})` })
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
export const makeDiscovery = (directory: string) => {
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
    if (Either.isLeft(stat)) return unreadable(path, displayPath, `cannot read: ${describeError(stat.left)}`)
    if (stat.right === undefined) {
      return unreadable(path, displayPath, "cannot read: ENOENT (vanished, or a dangling symlink)")
    }
    if (!stat.right.isFile()) return unreadable(path, displayPath, "cannot read: not a regular file")
    const { ino, mtimeMs, size } = stat.right
    const text = Either.try(() => Fs.readFileSync(path, "utf8"))
    if (Either.isLeft(text)) {
      // Not settled: a permission fix changes neither size nor mtime.
      return unreadable(path, displayPath, `cannot read: ${describeError(text.left)}`)
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
  /** Claws that are symlinks: an edit of their target is not an event in this directory. */
  let symlinks = new Set<string>()

  const claimNames = (): Either.Either<ReadonlyArray<string>, unknown> => {
    const dirStat = Either.try(() => Fs.statSync(absoluteDir))
    if (
      Either.isRight(dirStat) && listed !== undefined && listed.ino === dirStat.right.ino &&
      listed.mtimeMs === dirStat.right.mtimeMs && Date.now() - dirStat.right.mtimeMs > settleMillis
    ) {
      return Either.right(listed.names)
    }
    return Either.map(Either.try(() => Fs.readdirSync(absoluteDir, { withFileTypes: true })), (entries) => {
      // Like the shell glob `*.sh` (no hidden files, no recursion), sorted by
      // UTF-16 code units, which for ASCII names is the `LC_ALL=C` order.
      const claws = entries.filter((entry) => entry.name.endsWith(".sh") && !entry.name.startsWith("."))
      const names = claws.map((entry) => entry.name).sort()
      symlinks = new Set(claws.filter((entry) => entry.isSymbolicLink()).map((entry) => entry.name))
      listed = Either.isRight(dirStat) ? { ino: dirStat.right.ino, mtimeMs: dirStat.right.mtimeMs, names } : undefined
      return names
    })
  }

  // The watcher's view: names it reported since the last scan, or "all" when
  // it cannot say which (an event without a name, an error, not started).
  let watcher: Fs.FSWatcher | undefined
  let dirty: Set<string> | "all" = "all"
  let lastFullScan = 0

  const scan = (): Catalog => {
    const now = Date.now()
    if (wanted && watcher === undefined) startWatcher()
    const full = watcher === undefined || dirty === "all" || last === undefined || now - lastFullScan > fullScanMillis
    const reported = dirty
    dirty = new Set()
    if (full) lastFullScan = now
    const catalog = scanNames((name) =>
      full || (reported !== "all" && reported.has(name)) || symlinks.has(name) || cache.get(name)?.settled !== true
    )
    // A directory renamed or replaced is no longer the one watched: watch the new one from the next scan.
    if (watcher !== undefined && listed !== undefined && listed.ino !== watchedIno) stopWatcher()
    return catalog
  }

  let wanted = false
  let watchedIno = -1
  const stopWatcher = () => {
    watcher?.close()
    watcher = undefined
    dirty = "all"
  }
  const startWatcher = () => {
    const started = Either.try(() => {
      const ino = Fs.statSync(absoluteDir).ino
      const handle = Fs.watch(absoluteDir, { persistent: false }, (_event, name) => {
        if (dirty === "all") return
        if (typeof name === "string") dirty.add(name)
        else dirty = "all"
      })
      handle.on("error", stopWatcher)
      return { handle, ino }
    })
    if (Either.isRight(started)) {
      watcher = started.right.handle
      watchedIno = started.right.ino
    }
    // Events may have been missed before the watcher was up.
    dirty = "all"
  }

  /**
   * Change notification on the directory from the next scan on, after which
   * scans skip the files it reports unchanged; a directory that cannot be
   * watched keeps the full stat scan, and the watch is tried again at each
   * scan. Returns the function that stops it.
   */
  const watch = (): (() => void) => {
    wanted = true
    return () => {
      wanted = false
      stopWatcher()
    }
  }

  /** The catalogue from the current listing, statting only the names `check` selects. */
  const scanNames = (check: (name: string) => boolean): Catalog => {
    const entries = claimNames()
    if (Either.isLeft(entries)) {
      cache = new Map()
      last = undefined
      return {
        tools: [],
        problems: [{ source: directory, reason: `cannot read the claws directory: ${describeError(entries.left)}` }],
        files: new Map()
      }
    }
    const names = entries.right
    const next = new Map<string, CachedFile>()
    let changed = last === undefined || names.length !== cache.size
    for (const name of names) {
      const cached = cache.get(name)
      const file = cached !== undefined && !check(name) ? cached : load(name, `${absoluteDir}${Path.sep}${name}`)
      if (file !== cache.get(name)) changed = true
      next.set(name, file)
    }
    cache = next
    if (changed || last === undefined) last = merge(next.values())
    return last
  }

  return {
    scan,
    watch,
    /** True while change notification runs: a caller lets pending events in before `scan`. */
    watching: () => watcher !== undefined
  }
}
