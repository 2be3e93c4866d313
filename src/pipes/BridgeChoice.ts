/**
 * A bridge flag read: a built-in bridge by name, `none`, or the path of an
 * executable. Apart from Bridges.ts, which builds the far ends a choice
 * names, because reading a flag needs none of the adapters and Bridges.ts
 * is to read in one sitting; Bridges re-exports each name.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

export type Choice<Name extends string> =
  | { readonly _tag: "Builtin"; readonly name: Name }
  | { readonly _tag: "External"; readonly path: string }
  | { readonly _tag: "None" }

/** A bridge flag names no built-in bridge and no executable file. */
export class BridgeChoiceError extends Data.TaggedError("BridgeChoiceError")<{
  readonly reason: "unknown" | "not-executable"
  readonly message: string
}> {}

/** Reads a bridge flag: a built-in name, `none`, or a path to an executable. */
export const choose = <Name extends string>(
  role: string,
  value: string,
  builtins: ReadonlyArray<Name>
): Effect.Effect<Choice<Name>, BridgeChoiceError> => {
  if (value === "none") return Effect.succeed({ _tag: "None" })
  if ((builtins as ReadonlyArray<string>).includes(value)) return Effect.succeed({ _tag: "Builtin", name: value as Name })
  if (value.includes("/") || fs.existsSync(value)) {
    const resolved = path.resolve(value)
    const usable = fs.existsSync(resolved) && fs.statSync(resolved).isFile()
    return usable ? Effect.succeed({ _tag: "External", path: resolved }) : Effect.fail(
      new BridgeChoiceError({ reason: "not-executable", message: `--${role} ${value}: no such executable file` })
    )
  }
  return Effect.fail(
    new BridgeChoiceError({
      reason: "unknown",
      message: `unknown ${role} '${value}': expected ${[...builtins, "none"].join(", ")} or a path to an executable`
    })
  )
}
