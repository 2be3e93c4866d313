/**
 * Finding the claws: every `CLAWS_DIR/*.sh` (one directory, no hidden files,
 * no subdirectories) declares its tools on `#TOOLS:` lines inside the file;
 * there is no other manifest. A scan re-reads only the files whose identity
 * (inode, size, mtime, ctime) changed since the last one.
 *
 * Without a watch (`planckclaw tools`, doctor) every scan stats every file.
 * With `watch()` running (the agent), a scan stats the directory and only
 * the files the watcher named since the last scan, plus symlinks (an edit of
 * their target is no event here); with nothing named it costs the one
 * directory stat, which also catches a claw added, removed or renamed. Every
 * file is statted again (a full scan) before the watch is up, after a watch
 * error, and when the directory was removed, renamed or replaced. For what
 * inotify cannot see (a change through a hard link elsewhere, a network
 * filesystem, a queue overflow, which libuv drops silently), `verify`
 * steps through the listing, statting a slice at a time, and names the
 * claws whose identity moved as if the watch had.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Result from "effect/Result"
import { describeError } from "../runtime/Errors.js"
import { printable } from "../runtime/Printable.js"
import { type Catalog, merge, type ParsedFile, parseClawFile } from "./ClawDeclarations.js"

export { type Catalog, parseClawFile } from "./ClawDeclarations.js"

/**
 * A file modified this recently may be edited again within the filesystem's
 * timestamp granularity without its identity changing, so it is re-read
 * whenever it is statted until it is older than this (when watched, that
 * second edit is an event naming it, which gets it statted).
 */
const settleMillis = 2000

/**
 * Whether a version (a claw's, the directory's) changed within `settleMillis`
 * of `now`, so that a second change could leave its identity as it is. The
 * ctime is the kernel's stamp of the last change, which no call can set: one
 * ahead of this clock means the filesystem's clock is ahead, and the change
 * may be current. The mtime counts only near this clock (vfat's ctime is the
 * creation time): one further ahead was set, not written (a tarball's
 * dates, `touch -d`, a copy from a machine whose clock is ahead), and a
 * later write stamps the time of writing, which changes the identity.
 */
const changedRecently = (stat: { readonly mtimeMs: number; readonly ctimeMs: number }, now: number): boolean =>
  now - stat.ctimeMs <= settleMillis || Math.abs(now - stat.mtimeMs) <= settleMillis

/** What one claw declared, with the identity of the file version it came from. */
interface CachedFile extends ParsedFile {
  readonly path: string
  readonly ino: number
  readonly size: number
  readonly mtimeMs: number
  /** Changed by a chmod too, which decides whether the claw can be read. */
  readonly ctimeMs: number
  /** False for versions that must be re-read: unreadable, or modified too recently to trust the timestamps. */
  readonly settled: boolean
}


/** Starts a watch; `Fs.watch` unless a test hands in one that fails. */
export type WatchDirectory = (path: string, onEvent: (name: string | null) => void) => Fs.FSWatcher

const watchDirectory: WatchDirectory = (path, onEvent) =>
  Fs.watch(path, { persistent: false }, (_event, name) => onEvent(name))

const noNames: ReadonlySet<string> = new Set()

/** Like the shell glob `*.sh`: no hidden files. */
const isClawName = (name: string): boolean => name.endsWith(".sh") && !name.startsWith(".")

// The reason may quote the path (a system error's message): escaped, as the source is.
const unreadable = (path: string, displayPath: string, reason: string): CachedFile => ({
  declarations: [],
  problems: [{ source: displayPath, reason: printable(reason) }],
  path,
  ino: -1,
  size: -1,
  mtimeMs: -1,
  ctimeMs: -1,
  settled: false
})

/** Whether a stat shows the version read, trusted (settled) and unchanged. */
const isSameVersion = (cached: CachedFile | undefined, stat: Result.Result<Fs.Stats | undefined, unknown>): boolean =>
  cached !== undefined && cached.settled && Result.isSuccess(stat) && stat.success !== undefined &&
  cached.ino === stat.success.ino && cached.size === stat.success.size &&
  cached.mtimeMs === stat.success.mtimeMs && cached.ctimeMs === stat.success.ctimeMs

/**
 * Discovery with a per-file cache. Synchronous file calls on purpose: a
 * `stat` costs a few microseconds this way, far less than a round trip
 * through the libuv thread pool, and the pool is left to the FIFOs.
 */
// `wallClock`: what file times are compared with (Date.now, not Clock: they are wall-clock times), unless a test moves it on.
export const makeDiscovery = (directory: string, startWatch: WatchDirectory = watchDirectory, wallClock: () => number = Date.now) => {
  const absoluteDir = Path.resolve(directory)
  const baseName = Path.basename(absoluteDir)
  let cache = new Map<string, CachedFile>()
  let last: Catalog | undefined
  const counts = { directoryStats: 0, listings: 0, fileStats: 0, fileReads: 0, fullScans: 0 }

  const load = (name: string, path: string): CachedFile => {
    counts.fileStats++
    const stat = Result.try(() => Fs.statSync(path, { throwIfNoEntry: false }))
    const cached = cache.get(name)
    if (cached !== undefined && isSameVersion(cached, stat)) return cached
    // Escaped: the source is logged and listed, and a file name may hold a newline.
    const displayPath = printable(Path.join(directory, name))
    if (Result.isFailure(stat)) return unreadable(path, displayPath, `cannot read: ${describeError(stat.failure)}`)
    if (stat.success === undefined) {
      return unreadable(path, displayPath, "cannot read: ENOENT (vanished, or a dangling symlink)")
    }
    if (!stat.success.isFile()) return unreadable(path, displayPath, "cannot read: not a regular file")
    const { ctimeMs, ino, mtimeMs, size } = stat.success
    counts.fileReads++
    const text = Result.try(() => Fs.readFileSync(path, "utf8"))
    if (Result.isFailure(text)) return unreadable(path, displayPath, `cannot read: ${describeError(text.failure)}`)
    const settled = !changedRecently(stat.success, wallClock())
    return { ...parseClawFile(displayPath, text.success), path, ino, size, mtimeMs, ctimeMs, settled }
  }

  // The listing is read again only when the directory changed (adding,
  // removing or renaming a claw changes its mtime and ctime; the ctime too
  // when `tar x` puts the mtime back), or changed too recently to trust its
  // times, as for files.
  let listed: { readonly ino: number; readonly mtimeMs: number; readonly ctimeMs: number; readonly names: ReadonlyArray<string> } | undefined
  /** Claws that are symlinks: an edit of their target is no event here, so they are statted on every scan. */
  let symlinks = new Set<string>()

  /** The claw names, and whether the listing was read again. */
  const listNames = (dir: Fs.Stats): Result.Result<ReadonlyArray<string>, unknown> => {
    if (
      listed !== undefined && listed.ino === dir.ino && listed.mtimeMs === dir.mtimeMs && listed.ctimeMs === dir.ctimeMs &&
      !changedRecently(dir, wallClock())
    ) {
      return Result.succeed(listed.names)
    }
    return Result.map(readListing(), (listing) => {
      symlinks = listing.symlinks
      listed = { ino: dir.ino, mtimeMs: dir.mtimeMs, ctimeMs: dir.ctimeMs, names: listing.names }
      return listing.names
    })
  }

  const readListing = () => {
    counts.listings++
    return Result.map(Result.try(() => Fs.readdirSync(absoluteDir, { withFileTypes: true })), (entries) => {
      // No recursion, sorted by UTF-16 code units, which for ASCII names is
      // the `LC_ALL=C` order of the shell glob.
      const claws = entries.filter((entry) => isClawName(entry.name))
      return {
        names: claws.map((entry) => entry.name).sort(),
        symlinks: new Set(claws.filter((entry) => entry.isSymbolicLink()).map((entry) => entry.name))
      }
    })
  }

  // The watcher's view: the names it reported since the last scan, or "all"
  // when it cannot say which (not started yet, failed, restarted).
  let wanted = false
  let watcher: { readonly handle: Fs.FSWatcher; readonly dev: number; readonly ino: number } | undefined
  let dirty: Set<string> | "all" = "all"
  /** Why the directory is not watched, while a watch is wanted and fails. */
  let failure: string | undefined

  const stopWatcher = () => {
    watcher?.handle.close()
    watcher = undefined
    dirty = "all"
  }
  const startWatcher = (dir: Fs.Stats) => {
    const started = Result.try(() =>
      startWatch(absoluteDir, (name) => {
        // The directory itself was moved or removed (libuv names it by its
        // own base name), after which inotify reports nothing: watch again.
        if (name === null || name === baseName) stopWatcher()
        // Other names (an editor's swap file) cannot change the catalogue; a
        // claw renamed to one is still an event for its old name.
        else if (dirty !== "all" && isClawName(name)) dirty.add(name)
      })
    )
    if (Result.isFailure(started)) {
      failure = describeError(started.failure)
      return
    }
    const handle = started.success
    handle.on("error", (error) => {
      if (watcher?.handle === handle) {
        failure = describeError(error)
        stopWatcher()
      }
    })
    watcher = { handle, dev: dir.dev, ino: dir.ino }
    failure = undefined
    // Changes before the watch was up were not reported.
    dirty = "all"
  }

  const fail = (reason: unknown): Catalog => {
    stopWatcher()
    cache = new Map()
    listed = undefined
    last = undefined
    return {
      tools: [],
      problems: [{ source: printable(directory), reason: printable(`cannot read the claws directory: ${describeError(reason)}`) }],
      files: new Map()
    }
  }

  /** The catalogue, trusting the watch when one runs. */
  const scan = (): Catalog => {
    counts.directoryStats++
    const dirStat = Result.try(() => Fs.statSync(absoluteDir))
    if (Result.isFailure(dirStat)) return fail(dirStat.failure)
    const dir = dirStat.success
    // A directory renamed or replaced is no longer the one watched.
    if (watcher !== undefined && (watcher.ino !== dir.ino || watcher.dev !== dir.dev)) stopWatcher()
    if (wanted && watcher === undefined) startWatcher(dir)
    const full = watcher === undefined || dirty === "all" || last === undefined
    const named: ReadonlySet<string> = dirty === "all" ? noNames : dirty
    // An empty set stays: the usual scan, with nothing named, allocates none.
    if (dirty === "all" || dirty.size > 0) dirty = new Set()
    const before = listed
    const names = listNames(dir)
    if (Result.isFailure(names)) return fail(names.failure)
    if (last !== undefined && !full && listed === before && named.size === 0 && symlinks.size === 0) {
      return last
    }
    if (full) counts.fullScans++
    const nextCache = new Map<string, CachedFile>()
    let changed = last === undefined || names.success.length !== cache.size
    for (const name of names.success) {
      const cached = cache.get(name)
      const check = full || cached === undefined || symlinks.has(name) || named.has(name)
      const file = check ? load(name, `${absoluteDir}${Path.sep}${name}`) : cached
      if (file !== cached) changed = true
      nextCache.set(name, file)
    }
    cache = nextCache
    if (changed || last === undefined) last = merge(nextCache.values())
    return last
  }

  /**
   * One step of the safety pass over a watched directory: from `from` in the
   * listing, stats `count` claws and names to the next scan those whose
   * identity moved (or is too recent to trust); the first step also reads
   * the listing again. Returns where the next step starts, or undefined when
   * the pass is over (or pointless: an unwatched scan stats everything).
   */
  const verify = (from: number, count: number): number | undefined => {
    if (watcher === undefined || listed === undefined || dirty === "all") return undefined
    const names = listed.names
    if (from === 0) {
      const listing = readListing()
      if (Result.isFailure(listing) || listing.success.names.join("/") !== names.join("/")) {
        dirty = "all"
        return undefined
      }
    }
    const end = Math.min(names.length, from + count)
    for (let index = from; index < end; index++) {
      const name = names[index]!
      const cached = cache.get(name)
      counts.fileStats++
      const stat = Result.try(() => Fs.statSync(`${absoluteDir}${Path.sep}${name}`, { throwIfNoEntry: false }))
      if (!isSameVersion(cached, stat)) dirty.add(name)
    }
    return end < names.length ? end : undefined
  }

  /**
   * Change notification on the directory from the next scan on; a directory
   * that cannot be watched keeps the full stat scan, and the watch is tried
   * again at each scan. Returns the function that stops it.
   */
  const watch = (): (() => void) => {
    wanted = true
    return () => {
      wanted = false
      stopWatcher()
    }
  }

  return {
    scan,
    verify,
    watch,
    /** True while change notification runs: a caller lets pending events in before `scan`. */
    watching: () => watcher !== undefined,
    /** Why a wanted watch is not running (the scan stats every claw meanwhile). */
    watchFailure: () => (wanted ? failure : undefined),
    /** System calls made so far, for tests and the bench. */
    counts: () => ({ ...counts })
  }
}

export type Discovery = ReturnType<typeof makeDiscovery>
