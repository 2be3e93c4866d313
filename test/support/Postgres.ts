/**
 * A throwaway PostgreSQL server for tests: the machine's server binaries,
 * a data directory from `initdb` in a fresh temp directory, owned by an
 * unprivileged user (the `postgres` user when we run as root, else
 * ourselves; initdb runs once per machine into a template the servers
 * copy, left in tmp like any cache), listening only on
 * 127.0.0.1 on a free port and on a unix socket in that directory, started
 * with `pg_ctl`. Stopped and removed when its scope closes.
 *
 * A test process that dies cannot close its scope, so every directory
 * records its owner's pid; the next start stops the servers of dead owners
 * and removes their directories.
 *
 * `startPostgres` (Effect, scoped) for Effect code; `usePostgres` (vitest
 * beforeAll/afterAll) for a server shared by one test file, read inside a
 * test as an Effect; each test can
 * take its own database with `createDatabase`.
 */
import { execFile, type ExecFileOptions } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Data, Effect, Result, Exit, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { isAlive, MACHINE_TMP } from "./TestRunTmp.js"

/** The server could not be found, initialised, started, stopped or asked for a database. */
export class PostgresError extends Data.TaggedError("PostgresError")<{
  readonly message: string
}> {}

export interface PostgresServer {
  /** `postgres://postgres:PASSWORD@127.0.0.1:PORT/DATABASE` for the database made at start. */
  readonly url: string
  readonly port: number
  readonly database: string
  readonly user: string
  /** Only a test secret; tests check it never shows up in logs. */
  readonly password: string
  /** The temp directory: data in `data/`, the unix socket here, the log in `server.log`. */
  readonly directory: string
  /** Creates another database on this server and returns its URL. */
  readonly createDatabase: (name: string) => Effect.Effect<string, PostgresError>
  /** Stops the server abruptly (`-m immediate`), keeping its data: the database "goes away". */
  readonly stop: Effect.Effect<void, PostgresError>
  /** Starts it again on the same port with the same data: the database "comes back". */
  readonly start: Effect.Effect<void, PostgresError>
  /** The server's log so far, for a failing test's message. */
  readonly log: Effect.Effect<string>
}

const PREFIX = "planckclaw-pg-"
const TEMPLATE_PREFIX = "planckclaw-pgtemplate-"
const OWNER_FILE = "owner.pid"
const USER = "postgres"
const PASSWORD = "throwaway-test-password"

// ---------------------------------------------------------------------------
// Binaries and the user they run as

const versionOf = (dir: string): number => Number.parseFloat(path.basename(path.dirname(dir))) || 0

/** The newest /usr/lib/postgresql/N/bin holding initdb and pg_ctl, else the first such directory on PATH. */
export const findBinaries = (): string | undefined => {
  const has = (dir: string) => fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"))
  const root = "/usr/lib/postgresql"
  const installed = fs.existsSync(root)
    ? fs.readdirSync(root).map((version) => path.join(root, version, "bin")).filter(has)
    : []
  const newest = installed.sort((a, b) => versionOf(b) - versionOf(a))[0]
  if (newest !== undefined) return newest
  return (process.env["PATH"] ?? "").split(path.delimiter).filter((dir) => dir !== "").find(has)
}

interface RunAs {
  readonly uid: number
  readonly gid: number
}

const idOf = (flag: "-u" | "-g", user: string): number | undefined => {
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((entry) => entry.startsWith(`${user}:`))
  const fields = line?.split(":")
  const value = fields?.[flag === "-u" ? 2 : 3]
  return value === undefined ? undefined : Number(value)
}

/** PostgreSQL refuses to run as root: as root, drop to `postgres` (or `nobody`); otherwise run as ourselves. */
const unprivileged = (): RunAs | undefined => {
  if (process.getuid?.() !== 0) return undefined
  for (const user of ["postgres", "nobody"]) {
    const uid = idOf("-u", user)
    const gid = idOf("-g", user)
    if (uid !== undefined && gid !== undefined) return { uid, gid }
  }
  return undefined
}

// ---------------------------------------------------------------------------
// Processes

const run = (
  binaries: string,
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly runAs: RunAs | undefined }
): Effect.Effect<string, PostgresError> =>
  Effect.callback<string, PostgresError>((resume) => {
    const execOptions: ExecFileOptions = {
      cwd: options.cwd,
      // A clean locale and no inherited PG* settings: the server must not depend on the caller's environment.
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", LC_ALL: "C", LANG: "C" },
      ...(options.runAs === undefined ? {} : { uid: options.runAs.uid, gid: options.runAs.gid })
    }
    // A server binary by name; anything else (cp) from PATH.
    const program = fs.existsSync(path.join(binaries, command)) ? path.join(binaries, command) : command
    execFile(program, [...args], execOptions, (error, stdout, stderr) =>
      resume(
        error === null
          ? Effect.succeed(String(stdout))
          : Effect.fail(
            new PostgresError({ message: `${command} ${args.join(" ")} failed: ${error.message}\n${String(stderr)}` })
          )
      ))
  })

const freePort: Effect.Effect<number, PostgresError> = Effect.callback((resume) => {
  const server = net.createServer()
  server.once("error", (error) => resume(Effect.fail(new PostgresError({ message: `no free port: ${error.message}` }))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const readOr = (file: string, fallback: string): string =>
  Result.getOrElse(Result.try(() => fs.readFileSync(file, "utf8")), () => fallback)

/** Stops the servers of test processes that died without cleaning up, and removes their directories. */
const sweepStale = (binaries: string, runAs: RunAs | undefined): Effect.Effect<void> =>
  Effect.forEach(
    fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith(PREFIX)).map((name) => path.join(os.tmpdir(), name)),
    (dir) => {
      const owner = Number(readOr(path.join(dir, OWNER_FILE), "0"))
      if (owner > 0 && isAlive(owner)) return Effect.void
      // A directory without an owner file is being created right now by someone else: leave it.
      if (owner === 0) return Effect.void
      return stopServer(binaries, dir, runAs).pipe(
        Effect.ignore,
        Effect.andThen(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      )
    },
    { discard: true }
  )

const stopServer = (binaries: string, dir: string, runAs: RunAs | undefined) =>
  fs.existsSync(path.join(dir, "data", "postmaster.pid"))
    ? run(binaries, "pg_ctl", ["-D", path.join(dir, "data"), "-m", "immediate", "-w", "stop"], { cwd: dir, runAs })
    : Effect.void

const startServer = (binaries: string, dir: string, port: number, runAs: RunAs | undefined) =>
  run(
    binaries,
    "pg_ctl",
    [
      "-D",
      path.join(dir, "data"),
      "-l",
      path.join(dir, "server.log"),
      "-w",
      "-t",
      "60",
      "-o",
      // fsync off: cheap commits, and a killed server still recovers from the WAL in the page cache (a
      // machine crash is not what these tests simulate). synchronous_commit stays on: a commit is in the WAL.
      `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c full_page_writes=off -c max_connections=200`,
      "start"
    ],
    { cwd: dir, runAs }
  ).pipe(Effect.asVoid)

/**
 * A data directory made by `initdb` once per machine (per binaries and
 * user) and kept in tmp: initdb is most of a server's start on a loaded
 * machine, a copy is a fraction of it. Built under a temporary name and
 * renamed into place whole, so a racing or crashed builder never leaves a
 * half-made template where others look.
 */
const templateFor = (binaries: string, runAs: RunAs | undefined): Effect.Effect<string, PostgresError> =>
  Effect.gen(function*() {
    const key = crypto.createHash("sha256").update(`${binaries}\0${runAs?.uid ?? process.getuid?.() ?? 0}`).digest("hex")
    // In the machine's temporary directory, not the test run's (test/support/TestRunTmp.ts): kept between runs.
    const machineTmp = process.env[MACHINE_TMP] ?? os.tmpdir()
    const ready = path.join(machineTmp, `${TEMPLATE_PREFIX}${key.slice(0, 16)}`)
    if (fs.existsSync(ready)) return ready
    const building = fs.mkdtempSync(path.join(machineTmp, `${TEMPLATE_PREFIX}building-`))
    fs.writeFileSync(path.join(building, "pwfile"), `${PASSWORD}\n`)
    if (runAs !== undefined) {
      fs.chownSync(building, runAs.uid, runAs.gid)
      fs.chownSync(path.join(building, "pwfile"), runAs.uid, runAs.gid)
    }
    yield* run(binaries, "initdb", [
      "-D",
      path.join(building, "data"),
      "-U",
      USER,
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync",
      // The unix socket (the test's own directory) trusts; TCP asks for the password, as a real server would.
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      `--pwfile=${path.join(building, "pwfile")}`
    ], { cwd: building, runAs }).pipe(
      Effect.tapError(() => Effect.sync(() => fs.rmSync(building, { recursive: true, force: true })))
    )
    fs.rmSync(path.join(building, "pwfile"))
    // Another process may have finished first: its template serves, ours goes.
    const renamed = Result.try(() => fs.renameSync(building, ready))
    if (Result.isFailure(renamed)) fs.rmSync(building, { recursive: true, force: true })
    return ready
  })

// ---------------------------------------------------------------------------
// The server

/** Starts a fresh server with database `database`; stopped and its directory removed when the scope closes. */
export const startPostgres = (
  options: { readonly database?: string } = {}
): Effect.Effect<PostgresServer, PostgresError, Scope.Scope> =>
  Effect.gen(function*() {
    const binaries = findBinaries()
    if (binaries === undefined) {
      return yield* new PostgresError({
        message: "no PostgreSQL server binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin or on PATH"
      })
    }
    const runAs = unprivileged()
    yield* sweepStale(binaries, runAs)
    const database = options.database ?? "planckclaw_test"
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), PREFIX))
        fs.writeFileSync(path.join(dir, OWNER_FILE), String(process.pid))
        if (runAs !== undefined) fs.chownSync(dir, runAs.uid, runAs.gid)
        return dir
      }),
      (dir) =>
        stopServer(binaries, dir, runAs).pipe(
          Effect.ignore,
          Effect.andThen(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
        )
    )
    // A copy of the machine's template (made once by initdb), as the server's user, so it owns every file.
    const template = yield* templateFor(binaries, runAs)
    yield* run(binaries, "cp", ["-a", path.join(template, "data"), path.join(dir, "data")], { cwd: dir, runAs })
    // Another process may take the free port between our probe and the server's bind: try a few.
    const port = yield* freePort.pipe(
      Effect.tap((port) => startServer(binaries, dir, port, runAs)),
      Effect.retry({ times: 3 })
    )
    const urlOf = (name: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${name}`
    const createDatabase = (name: string) =>
      run(binaries, "createdb", ["-h", dir, "-p", String(port), "-U", USER, name], { cwd: dir, runAs }).pipe(
        Effect.as(urlOf(name))
      )
    yield* createDatabase(database)
    return {
      url: urlOf(database),
      port,
      database,
      user: USER,
      password: PASSWORD,
      directory: dir,
      createDatabase,
      stop: stopServer(binaries, dir, runAs).pipe(Effect.asVoid),
      start: startServer(binaries, dir, port, runAs),
      log: Effect.sync(() => readOr(path.join(dir, "server.log"), ""))
    } satisfies PostgresServer
  })

/**
 * One server for a whole test file: started in `beforeAll`, stopped and
 * removed in `afterAll`. The returned Effect gives the server inside a test.
 */
export const usePostgres = (options: { readonly database?: string } = {}): Effect.Effect<PostgresServer> => {
  let server: PostgresServer | undefined
  let scope: Scope.Closeable | undefined
  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    server = await Effect.runPromise(Scope.provide(startPostgres(options), scope))
  }, 120_000)
  afterAll(async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)
  return Effect.suspend(() =>
    server === undefined ? Effect.die(new Error("usePostgres: the server is not started (use it inside a test)")) : Effect.succeed(server)
  )
}
