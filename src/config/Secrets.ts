/**
 * The secrets the agent knows of, how they are checked, and how they are
 * kept out of reach of the processes it starts.
 *
 * A claw runs as the same user, so it can read `/proc/PID/environ` of the
 * agent: the original environment block, which deleting from `process.env`
 * does not change. `withdraw` therefore takes the secrets out of
 * `process.env` and also overwrites them in that block, through
 * `/proc/self/mem` (writing one's own memory needs no privilege). The values
 * live on only in the ConfigProvider the entry point builds.
 */
import * as fs from "node:fs"
import * as Arr from "effect/Array"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Redacted from "effect/Redacted"
import { describeError } from "../runtime/Errors.js"
import { invalidSetting, missingSetting } from "./ConfigRange.js"
import { type SecretKey, secretKeys } from "./settings/All.js"

/** The settings declared secret (src/config/settings/). */
export const secretNames: ReadonlyArray<SecretKey> = secretKeys
export type SecretName = SecretKey

export const isSecretName = (name: string): name is SecretName => (secretNames as ReadonlyArray<string>).includes(name)

/**
 * `value` without the spaces around it: what HTTP sends (fetch trims a
 * header) and a server may echo, so what scrub and the withholding look for.
 */
export const unpadded = (value: string): string => value.replace(/^ +| +$/g, "")

/**
 * What makes `value` unusable in an HTTP header, in words that never show
 * it; `undefined` when it is fine. Leading and trailing spaces are ignored,
 * as HTTP ignores them.
 */
export const problemWith = (value: string): string | undefined => {
  const text = unpadded(value)
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    const where = `at character ${index + 1}`
    if (code === 0x0a || code === 0x0d) return `holds a line break (CR or LF) ${where}`
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return `holds a control character ${where}`
    if (code === 0x20 || code === 0xa0) return `holds a space ${where}`
    if (code > 0xff) return `holds a character outside Latin-1 ${where}, which an HTTP header cannot carry`
  }
  return undefined
}

/**
 * A secret used in a header, without the spaces around it (unpadded): empty
 * (or only spaces) counts as unset, a value with characters a header cannot
 * carry is refused naming the key, never the value. `bare` strips what is
 * allowed around the secret itself (a "Bot " prefix) before the check.
 */
export const headerSecret = (
  name: SecretName,
  bare: (value: string) => string = (value) => value
): Config.Config<Redacted.Redacted<string>> =>
  // Not Config.redacted(...) around the check: that replaces the check's
  // message by "<redacted>"; the message never holds the value anyway.
  Config.String(name).pipe(
    Config.mapEffect((value) => {
      if (value.trim() === "") return Effect.fail(missingSetting(name))
      const problem = problemWith(bare(value))
      return problem === undefined
        ? Effect.succeed(Redacted.make(unpadded(value)))
        : Effect.fail(invalidSetting(name, `${problem}; the value is not shown`))
    })
  )

/** Below this length a secret is replaced only where it stands alone (see `scrub`). */
const SHORT_SECRET = 8

// The characters of host names, addresses and words (URL-unreserved): a short secret next to one is part of something else.
const unreserved = /[A-Za-z0-9._~-]/

/**
 * `text` with every occurrence of `secret` replaced by `<redacted>`: what a
 * server echoes may hold the key. A short secret (a placeholder key for a
 * local server, such as "x" or "1") is replaced only where it stands alone,
 * not inside a word or an address, or every "1" of 127.0.0.1 would go.
 */
export const scrub = (text: string, secret: string | undefined): string => {
  if (secret === undefined || secret === "") return text
  if (secret.length >= SHORT_SECRET) return text.split(secret).join("<redacted>")
  let out = ""
  let from = 0
  for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + secret.length)) {
    const before = text[at - 1]
    const after = text[at + secret.length]
    if ((before !== undefined && unreserved.test(before)) || (after !== undefined && unreserved.test(after))) continue
    out += text.slice(from, at) + "<redacted>"
    from = at + secret.length
  }
  return out + text.slice(from)
}

/** The values of the known secrets that are set: no child may inherit them, whatever variable they hide in. */
export const SecretValuesConfig: Config.Config<Array<Redacted.Redacted<string>>> = Config.all(
  secretNames.map((name) => Config.option(Config.Redacted(name)))
).pipe(Config.map(Arr.getSomes))

/**
 * Whether `value` holds one of `secrets`: is one, or has one inside (`Bearer
 * KEY`, a proxy URL `https://user:KEY@host`). Inside counts only for a
 * secret of a real key's length: a placeholder such as "x" is in half the
 * environment, and only a variable that is exactly it is withheld.
 */
const holdsSecret = (value: string, secrets: ReadonlySet<string>): boolean => {
  if (secrets.has(value) || secrets.has(unpadded(value))) return true
  for (const secret of secrets) if (secret.length >= SHORT_SECRET && value.includes(secret)) return true
  return false
}

/** Secret values as holdsSecret looks for them: unpadded (as sent, and echoed), the empty ones left out. */
const secretValues = (values: Iterable<string | undefined>): ReadonlySet<string> =>
  new Set([...values].flatMap((value) => value === undefined || value.trim() === "" ? [] : [unpadded(value)]))

/** This process's environment minus the secrets, by name and by value: what a child process gets. */
export const childEnvironment = (withheld: ReadonlyArray<Redacted.Redacted<string>>): Record<string, string> => {
  const values = secretValues([...secretNames.map((name) => process.env[name]), ...withheld.map(Redacted.value)])
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !isSecretName(key) && !holdsSecret(value, values)) env[key] = value
  }
  return env
}

/**
 * `env` without the secrets, by name and by value (an MCP server's
 * environment, which its mcp.json entry names): what is kept, and the names
 * left out.
 */
export const withoutSecrets = (
  env: Readonly<Record<string, string>>,
  withheld: ReadonlyArray<Redacted.Redacted<string>>
): { readonly env: Record<string, string>; readonly left: ReadonlyArray<string> } => {
  const values = secretValues([...secretNames.map((name) => process.env[name]), ...withheld.map(Redacted.value)])
  const kept: Record<string, string> = {}
  const left: Array<string> = []
  for (const [key, value] of Object.entries(env)) {
    if (isSecretName(key) || holdsSecret(value, values)) left.push(key)
    else kept[key] = value
  }
  return { env: kept, left }
}

// ---------------------------------------------------------------------------
// Withdrawing secrets from this process's environment

export interface Withdrawn {
  /** The secrets that were in the environment, by name. */
  readonly secrets: ReadonlyMap<SecretName, string>
  /** Why the start-up environment block could not be wiped (without /proc there is none to wipe). */
  readonly notWiped: string | undefined
}

interface BlockEntry {
  readonly name: string
  readonly value: string
  /** Where `NAME=value` starts in the block, and its length, in bytes. */
  readonly offset: number
  readonly length: number
}

const entries = (block: Buffer): Array<BlockEntry> => {
  const found: Array<BlockEntry> = []
  for (let offset = 0; offset < block.length;) {
    const zero = block.indexOf(0, offset)
    const end = zero === -1 ? block.length : zero
    const entry = block.subarray(offset, end).toString("utf8")
    const equals = entry.indexOf("=")
    if (equals > 0) found.push({ name: entry.slice(0, equals), value: entry.slice(equals + 1), offset, length: end - offset })
    offset = end + 1
  }
  return found
}

/** Where the start-up environment block sits in memory: field 50 of /proc/self/stat. */
const environBlockStart = (stat: string): Result.Result<number, string> => {
  // Fields after the command name, which may hold spaces: field 3 is the first.
  const start = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[50 - 3])
  return Number.isSafeInteger(start) && start > 0 ? Result.succeed(start) : Result.fail("no env_start in /proc/self/stat")
}

const attempt = <A>(what: () => A): Result.Result<A, string> => Result.mapError(Result.try(what), describeError)

/** Zeroes the entries of the start-up environment block that `hide` picks, and checks they are gone. */
const wipeEnvironBlock = (hide: (name: string, value: string) => boolean): Result.Result<void, string> =>
  Result.gen(function*() {
    const block = yield* attempt(() => fs.readFileSync("/proc/self/environ"))
    const hidden = entries(block).filter((entry) => hide(entry.name, entry.value))
    if (hidden.length === 0) return
    const start = yield* Result.flatMap(attempt(() => fs.readFileSync("/proc/self/stat", "utf8")), environBlockStart)
    const fd = yield* attempt(() => fs.openSync("/proc/self/mem", "r+"))
    const written = attempt(() => {
      for (const entry of hidden) fs.writeSync(fd, Buffer.alloc(entry.length), 0, entry.length, start + entry.offset)
    })
    attempt(() => fs.closeSync(fd))
    yield* written
    // Trust only what the kernel now shows.
    const after = yield* attempt(() => fs.readFileSync("/proc/self/environ"))
    if (entries(after).some((entry) => hide(entry.name, entry.value))) {
      return yield* Result.fail("/proc/self/environ still shows them after the write")
    }
  })

/**
 * Takes every secret out of `process.env`, and any variable holding a
 * secret's value (from the environment or from `alsoValues`, e.g. config.env)
 * under another name, whole or inside a longer value (holdsSecret); then wipes them all from the start-up environment
 * block. Run it before any child process is started.
 */
export const withdraw = (alsoValues: Iterable<string> = []): Effect.Effect<Withdrawn> =>
  Effect.sync(() => {
    const secrets = new Map<SecretName, string>()
    for (const name of secretNames) {
      const value = process.env[name]
      if (value !== undefined && value !== "") secrets.set(name, value)
    }
    const values = secretValues([...secrets.values(), ...alsoValues])
    const hide = (name: string, value: string) => isSecretName(name) || holdsSecret(value, values)
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && hide(name, value)) delete process.env[name]
    }
    if (!fs.existsSync("/proc/self/environ")) return { secrets, notWiped: undefined }
    const wiped = wipeEnvironBlock(hide)
    return { secrets, notWiped: Result.isFailure(wiped) ? wiped.failure : undefined }
  })
