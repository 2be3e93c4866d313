/**
 * `planckclaw init [DIR]`: makes a home from the package's templates (the
 * commented config.env, memory/soul.md, the shipped claws), creating only
 * what is missing: an existing file is never overwritten. It says what it
 * created and what to do next.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import { describeError, errnoCode } from "../../runtime/Errors.js"
import * as Home from "../../config/Home.js"
import { packageRoot } from "../../config/PackageRoot.js"

/** The home could not be made: the reason says whether the package or the target is at fault. */
export class InitError extends Data.TaggedError("InitError")<{
  readonly reason: "no-templates" | "io"
  readonly message: string
}> {}

interface Template {
  /** Inside the package. */
  readonly from: string
  /** Inside the home. */
  readonly to: string
  readonly mode: number
  readonly what: string
}

const templates = (root: string): Array<Template> => [
  // It will hold API keys: readable by its owner only.
  { from: "config.env.example", to: "config.env", mode: 0o600, what: "settings (put your ANTHROPIC_API_KEY here)" },
  { from: "memory/soul.md", to: "memory/soul.md", mode: 0o644, what: "the persona, sent as the system prompt" },
  ...fs.readdirSync(path.join(root, "claws")).filter((name) => name.endsWith(".sh")).sort().map((name) => ({
    from: `claws/${name}`,
    to: `claws/${name}`,
    mode: 0o755,
    what: "a claw (shell-script tool)"
  }))
]

const attempt = <A>(what: string, run: () => A): Result.Result<A, InitError> =>
  Result.mapError(Result.try(run), (error) => new InitError({ reason: "io", message: `${what}: ${describeError(error)}` }))

/** Why a path already there cannot serve as the file it is kept for; undefined when it can (a file, or a link to one). */
const unusable = (target: string): string | undefined => {
  const found = Result.getOrUndefined(Result.try(() => fs.lstatSync(target, { throwIfNoEntry: false })))
  if (found === undefined) return undefined
  const seen = found.isSymbolicLink() ? Result.getOrUndefined(Result.try(() => fs.statSync(target, { throwIfNoEntry: false }))) : found
  if (seen === undefined) return "a link to nothing"
  return seen.isFile() ? undefined : seen.isDirectory() ? "a directory" : "not a regular file"
}

/** Copies `template` unless its target exists; true when it created it. */
const place = (root: string, dir: string, template: Template): Result.Result<boolean, InitError> => {
  const target = path.join(dir, template.to)
  if (Home.present(target)) return Result.succeed(false)
  return Result.gen(function*() {
    yield* attempt(`cannot create ${path.dirname(target)}`, () => fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 }))
    const text = yield* attempt(`cannot read the template ${template.from}`, () => fs.readFileSync(path.join(root, template.from)))
    // "wx": fails rather than overwrite a file that appeared meanwhile.
    const written = Result.try(() => fs.writeFileSync(target, text, { flag: "wx", mode: template.mode }))
    if (Result.isFailure(written) && errnoCode(written.failure) === "EEXIST") return false
    yield* Result.mapError(written, (error) => new InitError({ reason: "io", message: `cannot create ${target}: ${describeError(error)}` }))
    return true
  })
}

/** What `planckclaw run` needs to find this home from where the user is. */
const howToUse = (dir: string): string => {
  const found = Home.locate().dir === dir
  const file = path.join(dir, "config.env")
  return found
    ? `Next: put your ANTHROPIC_API_KEY in ${file}, then run: planckclaw run`
    : `Next: put your ANTHROPIC_API_KEY in ${file}, then run: cd ${dir} && planckclaw run\n` +
      `  (or from anywhere: export PLANCKCLAW_HOME=${dir})`
}

export const init = (target: Option.Option<string>) =>
  Effect.gen(function*() {
    const root = packageRoot()
    if (root === undefined || !fs.existsSync(path.join(root, "config.env.example"))) {
      return yield* new InitError({ reason: "no-templates", message: "cannot find the package's templates (config.env.example)" })
    }
    const home = Home.locate()
    const dir = Option.match(target, { onNone: () => home.dir, onSome: (given) => path.resolve(given) })
    if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) {
      return yield* new InitError({ reason: "io", message: `${dir} exists and is not a directory` })
    }
    const all = yield* Effect.fromResult(attempt("cannot list the package's claws", () => templates(root)))
    const created: Array<Template> = []
    const kept: Array<Template> = []
    for (const template of all) {
      const made = yield* Effect.fromResult(place(root, dir, template)).pipe(
        // Stopped part-way: say what this run made already, so the user knows what is theirs to keep or remove.
        Effect.mapError((error) =>
          created.length === 0
            ? error
            : new InitError({ reason: error.reason, message: `${error.message} (already created in ${dir}: ${created.map((made) => made.to).join(", ")})` })
        )
      )
      ;(made ? created : kept).push(template)
    }
    const width = Math.max(...all.map((template) => template.to.length)) + 2
    if (created.length === 0) {
      yield* Console.log(`Nothing to do: ${dir} already holds every file of a home (kept as they are).`)
    } else {
      yield* Console.log(`Created in ${dir}:`)
      for (const template of created) yield* Console.log(`  ${template.to.padEnd(width)}${template.what}`)
      if (kept.length > 0) yield* Console.log(`Kept as they were: ${kept.map((template) => template.to).join(", ")}`)
    }
    for (const template of kept) {
      const why = unusable(path.join(dir, template.to))
      if (why !== undefined) yield* Console.log(`Warning: ${path.join(dir, template.to)} is ${why}, kept as it is; remove it and run init again for ${template.what}.`)
    }
    yield* Console.log(howToUse(dir))
    // Without DIR, a config.env of ours here that is no home's was passed over for the default: say so.
    if (Option.isNone(target) && home.passedOver !== undefined) yield* Console.log(`Note: ${Home.passedOverText(home.passedOver)}.`)
  })

export const initCommand = Command.make(
  "init",
  {
    // Text, not Argument.Directory: init says what is wrong with the path itself (a path through a file, say).
    dir: Argument.String("DIR").pipe(
      Argument.withDescription("where to make the home; default: PLANCKCLAW_HOME, else the current directory if it is a home, else ~/.planckclaw"),
      Argument.optional
    )
  },
  ({ dir }) => init(dir)
).pipe(Command.withDescription("Make a home: config.env, memory/soul.md and the shipped claws, without overwriting anything."))
